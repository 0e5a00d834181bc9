import Foundation
import HTTPTransport
import PatchAPI
import PatchCore
import PatchRegistry

extension Router where Context == PatchService {
    /// The routes of a release operation, each answered by `PatchService.perform`: what a route
    /// takes, where and how much of it, comes from the operation's definition.
    mutating func add(_ operation: any ReleaseOperation.Type) {
        let definition = operation.definition
        for route in definition.routes {
            let metric = Metrics.Route(rawValue: definition.metric) ?? .unknown
            guard definition.checksScript else {
                add(route, metric: metric, body: definition.bodyLimit) { s, q, p throws(HTTPError) in try s.perform(operation, on: route, q, p) }
                continue
            }
            // The script check waits for a worker process for up to its deadline: answered from
            // a thread of its own, so an I/O thread goes on serving devices meanwhile.
            add(route, metric: metric, body: definition.bodyLimit, replying: { s, q, p throws(HTTPError) in
                let promise = HTTPPromise()
                PatchService.scriptChecks.async {
                    do throws(HTTPError) { promise.keep(try s.perform(operation, on: route, q, p)) } catch { promise.keep(error.response) }
                }
                return .later(promise)
            })
        }
    }
}

extension PatchService {
    /// Where the calls that run the script check wait for it (`OperationDefinition.checksScript`).
    /// At most `ScriptChecker.maxConcurrent` workers run at once; the others wait their turn
    /// here, off the event loops.
    static let scriptChecks = DispatchQueue(label: "hotpatch.script-checks", attributes: .concurrent)

    /// Every release operation's handler: decode the call from the request, execute it in the
    /// registry under the caller's token, encode what it answers. A dry run is 200; a change
    /// its operation's status; one that waits for signatures 202 (`RegistryError.pending`).
    func perform<Operation: ReleaseOperation>(_ type: Operation.Type, on route: APIOperation, _ request: HTTPRequest,
                                              _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        // An operation on the registry as a whole (tokens) names no app.
        let app = route.parameters.contains("app") ? try appCatalog(p["app"]).app : nil
        let token = try caller(p)
        let operation: Operation, options: CallOptions
        do {
            let call = try type.definition.decode(route: route, path: p.values, query: request.arguments, header: { request.header($0) }, body: request.body)
            operation = try type.init(call.values)
            options = call.options
        } catch { throw error.httpError }
        // The script check's worker runs for up to its deadline: here, outside the registry's
        // lock, which every other change, read and reload waits for. What it recorded is kept
        // for the check the change makes under the lock (`ScriptChecker.prepare`); a script
        // that cannot be found (an unknown patch) is the change's own error to give.
        if type.definition.checksScript, let app,
           let (checker, script) = try? read({ registry throws(RegistryError) in (registry.scriptChecker, try operation.scriptToCheck(in: registry, app: app)) }),
           let script {
            checker.prepare(script)
        }
        let answer = try change(app: app, by: token) { registry throws(RegistryError) in
            try registry.perform(operation, options.context(app: app, actor: token.actor, caller: token))
        }
        let status = options.dryRun ? 200 : operation.status
        // A patch made (publish, promote, rollback --to), not a token or a delegation.
        if status == 201, type.definition.metric == Metrics.Route.publish.rawValue { metrics.recordPublish() }
        // A change's answer is never cached (a token's secret is in one).
        return .json(answer, status: status, headers: [("Cache-Control", "no-store")])
    }
}
