// Everything a request is parsed into (options, source URLs, the policy's values, negotiation, freshness) is part
// of the service's API: one import for users.
@_exported import ImageServiceQuery
