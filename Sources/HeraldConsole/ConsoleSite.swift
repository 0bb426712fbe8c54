import Foundation
import Mustache

/// The console's pages and static files, read from the `console/` directory once at start.
public struct ConsoleSite: Sendable {
    let settings: ConsoleSettings
    let templates: MustacheLibrary
    /// File name → (content type, bytes).
    let assets: [String: (contentType: String, bytes: [UInt8])]

    /// The file types the console ships, by extension.
    static let contentTypes = [
        "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml", "png": "image/png",
    ]

    /// Reads every template and asset; a template that does not parse fails here, not on a request.
    public static func load(_ settings: ConsoleSettings) async throws -> ConsoleSite {
        let templates = try await MustacheLibrary(directory: settings.directory + "/templates")
        guard templates.getTemplate(named: "layout") != nil else {
            throw ConsoleSiteError("no templates/layout.mustache in \(settings.directory)")
        }
        var assets: [String: (String, [UInt8])] = [:]
        let assetDirectory = settings.directory + "/assets"
        for name in try FileManager.default.contentsOfDirectory(atPath: assetDirectory) {
            guard let type = contentTypes[(name as NSString).pathExtension] else { continue }
            let data = try Data(contentsOf: URL(fileURLWithPath: assetDirectory + "/" + name))
            assets[name] = (type, Array(data))
        }
        return ConsoleSite(settings: settings, templates: templates, assets: assets)
    }

    /// A partial alone (no layout), for a page's script to swap in.
    func fragment(_ template: String, values: [String: Any]) -> String {
        guard let html = templates.render(values, withTemplate: template) else {
            preconditionFailure("no console template '\(template)'")
        }
        return html
    }

    /// `template` rendered inside the layout with `values`; the layout's own values come from `chrome`.
    func render(_ template: String, chrome: ConsoleChrome, values: [String: Any] = [:]) -> String {
        var context = chrome.values
        context.merge(values) { $1 }
        guard let html = templates.render(context, withTemplate: template) else {
            preconditionFailure("no console template '\(template)'")
        }
        return html
    }
}

/// The console directory is missing a part.
public struct ConsoleSiteError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
