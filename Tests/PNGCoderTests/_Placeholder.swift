// Placeholder so the package manifest resolves while PNGCoderTests is being written; replaced by the real module.
