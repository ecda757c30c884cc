// Placeholder so the package manifest resolves while JPEGCoder is being written; replaced by the real module.
