// Placeholder so the package manifest resolves while HTTPLoader is being written; replaced by the real module.
