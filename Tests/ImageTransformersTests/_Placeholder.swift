// Placeholder so the package manifest resolves while ImageTransformersTests is being written; replaced by the real module.
