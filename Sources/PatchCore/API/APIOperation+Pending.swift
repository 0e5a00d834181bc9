// Deleted when branch remote-routes merges (it adds these to the table with their routes).
extension APIOperation {
    public static let getThrottle = APIOperation("getThrottle", "GET", "/v1/apps/{app}/throttle", scope: .auditor, commands: ["apps throttle"])
    public static let setThrottle = APIOperation("setThrottle", "PUT", "/v1/apps/{app}/throttle", scope: .publisher, commands: ["apps throttle"])
    public static let notifyDevices = APIOperation("notifyDevices", "POST", "/v1/apps/{app}/notify", scope: .publisher, commands: ["notify"])
    public static let createToken = APIOperation("createToken", "POST", "/v1/tokens", scope: .publisher, commands: ["tokens create"])
}
