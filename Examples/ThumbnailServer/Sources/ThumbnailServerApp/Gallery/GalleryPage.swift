import Foundation

/// The HTML of `/`: every sample in each fit, as thumbnails this server makes; after the page's `load` event the
/// body carries `data-images` (count) and `data-broken` (images with no pixels).
enum GalleryPage {
    /// - Parameter link: the `/thumbnail` URL (path and query) for a query, signed when the server signs.
    static func html(origin: String, samples: [String], link: (String) -> String) -> String {
        let fits = ["contain", "cover", "fill"]
        let rows = samples.sorted().map { name in
            let source = "\(origin)/samples/\(name)"
            let encoded = source.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? source
            let cells = fits.map { fit in
                let href = link("url=\(encoded)&w=200&h=200&fit=\(fit)").replacingOccurrences(of: "&", with: "&amp;")
                return """
                    <figure><img src="\(href)" alt="\(name), \(fit)"><figcaption>\(fit)</figcaption></figure>
                    """
            }
            return "<section><h2><a href=\"/samples/\(name)\">\(name)</a></h2>\(cells.joined())</section>"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Thumbnail server</title>
            <style>
            body { font-family: system-ui, sans-serif; margin: 2rem; }
            section { display: flex; gap: 1rem; align-items: end; flex-wrap: wrap; }
            h2 { width: 100%; font-size: 1rem; margin: 1.5rem 0 0; }
            figure { margin: 0; text-align: center; }
            img { border: 1px solid #ccc; background: repeating-conic-gradient(#eee 0 25%, #fff 0 50%) 0 0 / 16px 16px; }
            </style></head>
            <body><h1>Thumbnail server</h1>
            <p>200×200 thumbnails of the sample images, made by <code>GET /thumbnail</code>.
            Health: <a href="/health">/health</a>, <a href="/ready">/ready</a>.</p>
            \(rows.joined(separator: "\n"))
            <script>
            // After every image settled, record how many there are and how many failed, so a headless browser
            // (the test, or a health check) can read the outcome from the DOM.
            window.addEventListener("load", () => {
              const images = Array.from(document.images);
              document.body.dataset.images = images.length;
              document.body.dataset.broken = images.filter(i => !(i.complete && i.naturalWidth > 0)).length;
            });
            </script>
            </body></html>

            """
    }
}
