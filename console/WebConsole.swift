/// The web console's files, each the bytes of the file of that name beside this one: SwiftPM
/// compiles every other file of console/ into this module (`.embedInCode` in Package.swift makes
/// each a `PackageResources` array at build time), so the repository holds one copy and patchd
/// needs nothing installed next to it. A file added to console/ is served once it has its line
/// here; ConsoleRouteTests fails until then. (operations.js, which api.js imports, is no file:
/// patchd renders it from its operation table, PatchServer's OperationsScript.)
public enum ConsoleFiles {
    public struct File: Sendable {
        public let name: String
        public let contentType: String
        public let bytes: [UInt8]

        public init(name: String, contentType: String, bytes: [UInt8]) {
            self.name = name
            self.contentType = contentType
            self.bytes = bytes
        }
    }

    public static let javaScript = "text/javascript; charset=utf-8"
    static let css = "text/css; charset=utf-8"
    static let html = "text/html; charset=utf-8"
    static let svg = "image/svg+xml"

    public static let all: [File] = [
        File(name: "actions.js", contentType: javaScript, bytes: PackageResources.actions_js),
        File(name: "api.js", contentType: javaScript, bytes: PackageResources.api_js),
        File(name: "charts.js", contentType: javaScript, bytes: PackageResources.charts_js),
        File(name: "console.css", contentType: css, bytes: PackageResources.console_css),
        File(name: "diff.js", contentType: javaScript, bytes: PackageResources.diff_js),
        File(name: "dom.js", contentType: javaScript, bytes: PackageResources.dom_js),
        File(name: "favicon.svg", contentType: svg, bytes: PackageResources.favicon_svg),
        File(name: "index.html", contentType: html, bytes: PackageResources.index_html),
        File(name: "main.js", contentType: javaScript, bytes: PackageResources.main_js),
        File(name: "page-app.js", contentType: javaScript, bytes: PackageResources.page_app_js),
        File(name: "page-apps.js", contentType: javaScript, bytes: PackageResources.page_apps_js),
        File(name: "page-audit.js", contentType: javaScript, bytes: PackageResources.page_audit_js),
        File(name: "page-patch.js", contentType: javaScript, bytes: PackageResources.page_patch_js),
        File(name: "pending.js", contentType: javaScript, bytes: PackageResources.pending_js),
        File(name: "shell.js", contentType: javaScript, bytes: PackageResources.shell_js),
    ]
}
