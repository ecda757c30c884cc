// Placeholder so the package manifest resolves while PNGCoder is being written; replaced by the real module.
