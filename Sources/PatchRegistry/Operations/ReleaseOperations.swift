import Foundation
import PatchCore

/// Every release operation, by kind.
public enum ReleaseOperations {
    public static let all: [any ReleaseOperation.Type] = [
        PublishOperation.self, PromoteOperation.self, RolloutOperation.self, HaltOperation.self, ResumeOperation.self,
        RevokeOperation.self, RollbackOperation.self, CreateChannelOperation.self,
        GuardOperation.self, RemoveGuardOperation.self, ThrottleOperation.self, ScheduleOperation.self,
        CreateTokenOperation.self, RevokeTokenOperation.self, DelegateOperation.self, UndelegateOperation.self,
        WithholdRoleOperation.self, ManifestOperation.self, CheckScriptOperation.self, AddWebhookOperation.self, RemoveWebhookOperation.self,
        TestWebhookOperation.self,
    ]

    public static func type(_ kind: String) -> (any ReleaseOperation.Type)? { all.first { $0.definition.kind == kind } }

    /// The operation of `kind` with `values`: what a pending change replays.
    public static func decode(_ kind: String, _ values: OperationValues) throws(RegistryError) -> any ReleaseOperation {
        guard let type = type(kind) else { throw .invalidCall("no release operation \(kind.debugSanitized)") }
        return try type.init(values)
    }
}

extension Registry {
    /// The one way a release operation runs, in patchd's handler and in patchctl's local form
    /// alike: what its route answers, marked `"dryRun": true` for a dry run.
    public func perform(_ operation: some ReleaseOperation, _ context: OperationContext) throws(RegistryError) -> JSON {
        try operation.execute(on: self, context).markedDryRun(context.dryRun)
    }
}
