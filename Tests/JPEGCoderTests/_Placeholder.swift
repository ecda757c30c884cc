// Placeholder so the package manifest resolves while JPEGCoderTests is being written; replaced by the real module.
