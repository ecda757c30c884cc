import Foundation

/// The two calls every load makes on the manager's own cache and loader — the synchronous memory query and the
/// credentials question — made on the stored values of their concrete types.
///
/// Calling a method through an `any ImageCacheProtocol` property copies the existential out first (through its
/// type's value witnesses, with a retain and a release); the subclass below is created once per manager with the
/// existentials opened, so each load's call is a plain virtual call on a `let`.
///
/// Sendable: the class has no stored state; its only subclass holds `let`s of `Sendable` types. That, not a lock,
/// is why it may be `@unchecked Sendable` (a non-final class can't be checked).
class ManagerStrategies: @unchecked Sendable {
    /// The manager's cache's answer; see ``ImageCacheProtocol/queryImageSync(forKey:options:context:cacheType:)``.
    func queryImageSync(
        forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
    ) -> SyncCacheQueryResult {
        .needsAsyncQuery
    }

    /// The manager's loader's answer; see ``ImageLoader/requestCarriesCredentials(for:options:context:)``.
    func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool { false }

    /// The strategies of `cache` and `loader`, opened to their concrete types.
    static func make(cache: any ImageCacheProtocol, loader: any ImageLoader) -> ManagerStrategies {
        func open<Cache: ImageCacheProtocol, Loader: ImageLoader>(_ cache: Cache, _ loader: Loader) -> ManagerStrategies
        {
            Concrete(cache: cache, loader: loader)
        }
        return open(cache, loader)
    }

    private final class Concrete<Cache: ImageCacheProtocol, Loader: ImageLoader>: ManagerStrategies,
        @unchecked Sendable
    {
        let cache: Cache
        let loader: Loader

        init(cache: Cache, loader: Loader) {
            self.cache = cache
            self.loader = loader
        }

        override func queryImageSync(
            forKey key: String, options: ImageOptions, context: ImageContext, cacheType: ImageCacheType
        ) -> SyncCacheQueryResult {
            cache.queryImageSync(forKey: key, options: options, context: context, cacheType: cacheType)
        }

        override func requestCarriesCredentials(for url: URL, options: ImageOptions, context: ImageContext) -> Bool {
            loader.requestCarriesCredentials(for: url, options: options, context: context)
        }
    }
}
