// Placeholder so the package manifest resolves while HTTPLoaderTests is being written; replaced by the real module.
