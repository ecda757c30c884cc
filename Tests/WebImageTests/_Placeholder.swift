// Placeholder so the package manifest resolves while WebImageTests is being written; replaced by the real module.
