// Placeholder so the package manifest resolves while GIFCoderTests is being written; replaced by the real module.
