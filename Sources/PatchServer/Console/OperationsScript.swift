import HTTPTransport
import PatchAPI
import PatchCore
import PatchRegistry
import WebConsole

/// The console's `operations.js`: each operation's method, path and scope (the operation
/// table), then each release operation's routes, danger and parameters (its definition in
/// PatchRegistry/Operations), which api.js's `url` and `perform` build every request from, so
/// the console spells no route or parameter of its own. Rendered by patchd, never kept as a
/// file: it cannot differ from the table the router is built from.
enum OperationsScript {
    static let name = "operations.js"

    /// Served like a file of console/ (ConsoleSite): same headers, ETag and 304s.
    static var file: ConsoleFiles.File {
        ConsoleFiles.File(name: name, contentType: ConsoleFiles.javaScript, bytes: Array(render().utf8))
    }

    /// Strings go in unescaped: ConsoleRouteTests holds every id, path and name to characters
    /// that need no escape in a JavaScript string or key.
    static func render() -> String {
        var out = """
        // Rendered by patchd from its operation table (APIOperation) and the release operations'
        // definitions (PatchRegistry/Operations), and served with the console's files. api.js
        // builds every URL and every release call from it, so the console spells no route or
        // parameter of its own.
        export const operations = Object.freeze({

        """
        for operation in APIOperation.all {
            out += "  \(operation.id): Object.freeze({ method: \"\(operation.method)\", path: \"\(operation.path)\", scope: \"\(operation.scope.rawValue)\" }),\n"
        }
        out += "});\n\nexport const releases = Object.freeze({\n"
        for type in ReleaseOperations.all {
            let d = type.definition
            let parameters = (d.parameters + d.callParameters).map { p in
                "    Object.freeze({ name: \"\(p.name)\", in: \"\(p.place.rawValue)\", kind: \"\(p.kind.rawValue)\", required: \(p.required)"
                    + (p.route.map { ", route: \"\($0)\"" } ?? "") + " }),\n"
            }.joined()
            out += "  \"\(d.kind)\": Object.freeze({\n    routes: [\(d.routes.map { "\"\($0.id)\"" }.joined(separator: ", "))], danger: \"\(d.danger.rawValue)\", confirms: \(d.confirms),\n"
            out += "    parameters: Object.freeze([\n\(parameters.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))\n    ]),\n  }),\n"
        }
        return out + "});\n"
    }
}
