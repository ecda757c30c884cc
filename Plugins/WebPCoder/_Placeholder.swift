// Placeholder so the package manifest resolves while WebPCoder is being written; replaced by the real module.
