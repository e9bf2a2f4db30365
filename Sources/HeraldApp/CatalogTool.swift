import Foundation
import HeraldCatalog
import HeraldEvents

/// What `herald catalog check` and `herald render` do, apart from parsing flags.
public enum CatalogTool {
    /// The result of checking a catalog directory.
    public struct CheckReport: Sendable {
        public var diagnostics: [CatalogDiagnostic]
        public var kinds: Int
        public var locales: [String]
        public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

        /// One line per diagnostic, then a summary line.
        public var lines: [String] {
            let errors = diagnostics.filter { $0.severity == .error }.count
            let warnings = diagnostics.count - errors
            var lines = diagnostics.map(\.description)
            if hasErrors {
                lines.append("catalog check failed: \(errors) error(s), \(warnings) warning(s)")
            } else {
                lines.append(
                    "catalog ok: \(kinds) kind(s), locales \(locales.joined(separator: ", ")), \(warnings) warning(s)"
                )
            }
            return lines
        }
    }

    /// Loads and type-checks the catalog at `directory`.
    public static func check(directory: String) -> CheckReport {
        do {
            let (catalog, warnings) = try CatalogLoader.load(directory: directory)
            return CheckReport(diagnostics: warnings, kinds: catalog.kinds.count, locales: catalog.settings.locales)
        } catch {
            return CheckReport(diagnostics: error.diagnostics, kinds: 0, locales: [])
        }
    }

    /// A failure of `herald render`, with the message to print.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Renders the event in `eventFile` with the catalog at `directory`.
    public static func render(
        catalogDirectory directory: String,
        eventFile: String,
        locale: String?,
        timeZone: String
    ) throws(Failure) -> RenderedNotification {
        try renderEvent(catalogDirectory: directory, eventFile: eventFile, locale: locale, timeZone: timeZone).rendered
    }

    /// Renders the event in `eventFile`, and returns the decoded event too.
    static func renderEvent(
        catalogDirectory directory: String,
        eventFile: String,
        locale: String?,
        timeZone: String
    ) throws(Failure) -> (event: CloudEvent, rendered: RenderedNotification) {
        let catalog: Catalog
        do {
            catalog = try CatalogLoader.load(directory: directory).catalog
        } catch {
            throw Failure(description: error.description + "\ncatalog check failed: fix the catalog first")
        }
        guard let bytes = FileManager.default.contents(atPath: eventFile) else {
            throw Failure(description: "cannot read event file \(eventFile)")
        }
        let event: CloudEvent
        do {
            event = try EventDecoder().decode(value: Array(bytes))
        } catch {
            throw Failure(description: "\(eventFile): \(error)")
        }
        guard let kind = catalog.kind(for: event) else {
            throw Failure(description: "no kind in the catalog handles event type '\(event.type)'")
        }
        do {
            return (event, try Renderer(catalog: catalog).render(event, as: kind, locale: locale, timeZone: timeZone))
        } catch {
            throw Failure(description: "\(eventFile): \(error)")
        }
    }

    /// A notification as a person reads it.
    public static func text(_ rendered: RenderedNotification, timeZone: String) -> String {
        var lines = [
            "\(rendered.kind)  [\(rendered.app) · \(rendered.category) · \(rendered.locale)\(rendered.usedFallbackLocale ? " (fallback)" : "") · \(timeZone)]"
        ]
        if rendered.presentation.silent {
            lines.append("  silent:    nothing is shown; the app wakes with the data")
        } else if rendered.presentation.badgeOnly {
            lines.append("  badge only: no text and no sound; the app icon's count changes")
        } else {
            lines.append("  title:     \(rendered.title)")
            if let subtitle = rendered.subtitle { lines.append("  subtitle:  \(subtitle)") }
            lines.append("  body:      \(rendered.body)")
        }
        if let link = rendered.deepLink {
            lines.append("  deep link: \(link.preferred)")
            if let scheme = link.schemeURL, scheme != link.preferred { lines.append("             \(scheme)") }
        }
        if let image = rendered.imageURL { lines.append("  image:     \(image)") }
        if let badge = rendered.badge { lines.append("  badge:     \(badge)") }
        lines.append("  data:      " + rendered.data.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }

    /// A notification as JSON.
    public static func json(_ rendered: RenderedNotification) -> String {
        var members: [(key: String, value: JSONValue)] = [
            ("kind", .string(rendered.kind)), ("category", .string(rendered.category)), ("app", .string(rendered.app)),
            ("locale", .string(rendered.locale)), ("usedFallbackLocale", .bool(rendered.usedFallbackLocale)),
            ("title", .string(rendered.title)),
        ]
        if let subtitle = rendered.subtitle { members.append(("subtitle", .string(subtitle))) }
        members.append(("body", .string(rendered.body)))
        if rendered.presentation.silent { members.append(("silent", .bool(true))) }
        if rendered.presentation.badgeOnly { members.append(("badgeOnly", .bool(true))) }
        if let link = rendered.deepLink {
            var linkMembers: [(key: String, value: JSONValue)] = [("path", .string(link.path))]
            if let scheme = link.schemeURL { linkMembers.append(("scheme", .string(scheme))) }
            if let universal = link.universalURL { linkMembers.append(("universal", .string(universal))) }
            members.append(("deepLink", .object(JSONObject(linkMembers))))
        }
        if let image = rendered.imageURL { members.append(("image", .string(image))) }
        if let badge = rendered.badge { members.append(("badge", .number(String(badge)))) }
        members.append(("data", .object(JSONObject(rendered.data.map { ($0.key, JSONValue.string($0.value)) }))))
        return JSONValue.object(JSONObject(members)).serialized
    }
}
