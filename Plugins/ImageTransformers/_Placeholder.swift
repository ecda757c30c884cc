// Placeholder so the package manifest resolves while ImageTransformers is being written; replaced by the real module.
