// Placeholder so the package manifest resolves while WebPCoderTests is being written; replaced by the real module.
