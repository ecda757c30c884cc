// Placeholder so the package manifest resolves while WebImage is being written; replaced by the real module.
