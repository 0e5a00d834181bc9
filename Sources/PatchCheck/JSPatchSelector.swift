/// JSPatch's spelling of Objective-C selectors as JavaScript method names (docs/PROTOCOL.md,
/// "Script check", with test vectors): in a `defineClass` method table, `__` stands for a
/// literal underscore, `_` for a colon, and when the function takes more arguments than the
/// name has colons, one colon is appended (`tableView_cellForRowAtIndexPath` with two
/// arguments is `tableView:cellForRowAtIndexPath:`). JPEngine does it in three replacements
/// (`__` → `-`, `_` → `:`, `-` → `_`), so a `-` typed in a quoted name also becomes `_`;
/// this follows it exactly.
public enum JSPatchSelector {
    public static func selector(jsName: String, arity: Int) -> String {
        var name = jsName.replacing("__", with: "-").replacing("_", with: ":").replacing("-", with: "_")
        if name.count(where: { $0 == ":" }) < arity { name += ":" }
        return name
    }

    /// How a script names `selector`: the inverse, dropping the trailing colon the function's
    /// arguments give back (`tableView:cellForRowAtIndexPath:` → `tableView_cellForRowAtIndexPath`).
    public static func jsName(selector: String) -> String {
        var name = Substring(selector)
        if name.hasSuffix(":") { name = name.dropLast() }
        return String(name).replacing("_", with: "__").replacing(":", with: "_")
    }

    /// How many arguments a method with this selector takes (its colons).
    public static func arity(selector: String) -> Int { selector.count(where: { $0 == ":" }) }

    /// A name JSPatch keeps in JavaScript when the class lacks it: JPEngine adds no native
    /// method for a name that starts with an underscore.
    public static func isJavaScriptOnly(jsName: String) -> Bool { jsName.hasPrefix("_") }
}
