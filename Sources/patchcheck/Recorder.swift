/// The recording JSPatch runtime: JavaScript that stands in for what JSPatch gives a script's
/// top level (`require`, `defineClass`, `defineProtocol`, `include`, `block`, `dispatch_*`,
/// `console`, …), evaluated before the script. Instead of touching Objective-C it writes down
/// which classes the script requires and defines, with each method table's names and arities;
/// method bodies are never called. It reads the tables the way JSPatch's own JSPatch.js does
/// (a `for…in` over each, stopping at the first entry that is not a function, since JSPatch
/// drops the rest of the table there), so a getter in a table runs here as it would on a device.
///
/// Its value is a function that answers the recording as JSON; it captures what it needs
/// before the script runs, so a script that replaces `JSON.stringify` or `Object.keys` does not
/// change what is reported. (It guards against mistakes, not against a publisher set on fooling
/// it: the two-person rule is for that.)
enum Recorder {
    static let url = "hotpatch-recorder.js"

    static let source = #"""
    (function (global) {
        'use strict';
        var stringify = JSON.stringify, isArray = Array.isArray, toText = String, ErrorType = Error;
        var ProxyType = Proxy, toPrimitive = Symbol.toPrimitive;
        // Bounds on what a script can make the recording hold: entries per list, methods in
        // all, characters per name. Past them the recording says `truncated`.
        var limits = { entries: 2000, methods: 20000, text: 300, dropped: 50, located: 500 };
        var classes = [], required = [], protocols = [], includes = [];
        var truncated = false, methodCount = 0;
        var frame = /main\.js:(\d+):(\d+)/;

        function clip(value) {
            var text = toText(value);
            return text.length > limits.text ? text.slice(0, limits.text) + '\u2026' : text;
        }
        function add(list, entry) {
            if (list.length >= limits.entries) { truncated = true; return; }
            list[list.length] = entry;
        }
        // Where in main.js the current call was made: the first frame of the script's own.
        // A stack trace costs some 30 µs: the first `limits.located` calls say where they were
        // made, and later ones (a generated script of thousands of classes) do not.
        var located = 0;
        function where() {
            if (located >= limits.located) return {};
            located++;
            // Three frames reach the script's own (where, the stand-in, its caller).
            var limit = ErrorType.stackTraceLimit;
            ErrorType.stackTraceLimit = 3;
            var stack = new ErrorType().stack;
            ErrorType.stackTraceLimit = limit;
            var lines = toText(stack || '').split('\n');
            for (var i = 0; i < lines.length; i++) {
                var match = frame.exec(lines[i]);
                if (match) return { line: +match[1], column: +match[2] };
            }
            return {};
        }
        // What `require('UIView')` and a defined class give the script: any property is
        // another stand-in, callable, so `UIColor.redColor()` and `a.b.c()` at top level run.
        function standIn(label) {
            return new ProxyType(function () {}, {
                get: function (target, key) {
                    if (key === '__clsName') return label;
                    if (key === toPrimitive || key === 'toString' || key === 'valueOf' || key === 'toJSON') {
                        return function () { return label; };
                    }
                    if (typeof key === 'symbol') return undefined;
                    return standIn(label);
                },
                set: function () { return true; },
                apply: function () { return standIn(label); },
                construct: function () { return standIn(label); }
            });
        }
        function methods(table, into, problems, kind) {
            if (table === undefined || table === null) return;
            if (typeof table !== 'object' && typeof table !== 'function') {
                problems.push({ kind: 'table', table: kind, message: 'the ' + kind + ' method table is a ' + typeof table + ', not an object' });
                return;
            }
            var names = [];
            for (var name in table) names[names.length] = name;
            for (var i = 0; i < names.length; i++) {
                var value = table[names[i]];
                if (typeof value !== 'function') {
                    var dropped = [];
                    for (var j = i + 1; j < names.length && dropped.length < limits.dropped; j++) dropped[dropped.length] = clip(names[j]);
                    problems.push({ kind: 'not-a-function', table: kind, name: clip(names[i]), valueType: typeof value, dropped: dropped });
                    return;
                }
                if (methodCount >= limits.methods) { truncated = true; return; }
                methodCount++;
                into[into.length] = { name: clip(names[i]), arity: +value.length || 0 };
            }
        }
        var declarationForm = /^\s*([A-Za-z_$][\w$]*)\s*(?::\s*([A-Za-z_$][\w$]*)\s*)?(?:<([^>]*)>)?\s*$/;
        function declared(text, entry) {
            var match = declarationForm.exec(text);
            if (!match) {
                entry.problems.push({ kind: 'declaration', message: 'is not "Name", "Name : Superclass" or "Name : Superclass <Protocol, ...>"' });
                return null;
            }
            entry.name = match[1];
            if (match[2]) entry.superclass = match[2];
            entry.protocols = [];
            if (match[3]) {
                var names = match[3].split(',');
                for (var i = 0; i < names.length; i++) {
                    var protocol = names[i].trim();
                    if (protocol) entry.protocols[entry.protocols.length] = clip(protocol);
                }
            }
            return entry.name;
        }
        function classNamed(name) {
            if (global[name] === undefined) global[name] = standIn(name);
            return global[name];
        }

        global.require = function () {
            var last, at = where();
            for (var i = 0; i < arguments.length; i++) {
                var names = toText(arguments[i]).split(',');
                for (var j = 0; j < names.length; j++) {
                    var name = names[j].trim();
                    if (!name) continue;
                    add(required, { name: clip(name), at: at });
                    last = classNamed(name);
                }
            }
            return last;
        };
        global.defineClass = function (declaration, properties, instanceMethods, classMethods) {
            var entry = { declaration: clip(declaration), at: where(), properties: [], instanceMethods: [], classMethods: [], problems: [] };
            if (!isArray(properties)) {
                classMethods = instanceMethods;
                instanceMethods = properties;
                properties = [];
            }
            var name = declared(toText(declaration), entry);
            for (var i = 0; i < properties.length && i < limits.entries; i++) entry.properties[i] = clip(properties[i]);
            methods(instanceMethods, entry.instanceMethods, entry.problems, 'instance');
            methods(classMethods, entry.classMethods, entry.problems, 'class');
            add(classes, entry);
            return name ? classNamed(name) : standIn(toText(declaration));
        };
        global.defineProtocol = function (declaration, instanceMethods, classMethods) {
            var entry = { declaration: clip(declaration), at: where(), instanceMethods: [], classMethods: [], problems: [] };
            declared(toText(declaration), entry);
            var tables = [[instanceMethods, entry.instanceMethods], [classMethods, entry.classMethods]];
            for (var t = 0; t < 2; t++) {
                var table = tables[t][0];
                if (table === undefined || table === null || typeof table !== 'object') continue;
                // A protocol method is {paramsType: 'CGRect, float', returnType: 'id'}: its
                // parameter count is what JSPatch gives the trailing colon.
                for (var key in table) {
                    if (tables[t][1].length >= limits.entries) { truncated = true; break; }
                    var types = table[key] && table[key].paramsType;
                    var arity = types ? toText(types).split(',').length : 0;
                    tables[t][1].push({ name: clip(key), arity: arity });
                }
            }
            add(protocols, entry);
        };
        // A class JSPatch keeps in JavaScript only: nothing native to check or record.
        global.defineJSClass = function (declaration) { return standIn(toText(declaration)); };
        global.include = function (file) { add(includes, { file: clip(file), at: where() }); };
        global.resourcePath = function (file) { return toText(file); };
        global.block = function (types, fn) { return typeof types === 'function' ? types : fn; };
        // Callbacks JSPatch runs later, on a queue: method bodies in effect, never run here.
        global.dispatch_after = function () {};
        global.dispatch_async_main = function () {};
        global.dispatch_sync_main = function () {};
        global.dispatch_async_global_queue = function () {};
        global.defineStruct = function () {};
        global.defineCFunction = function () {};
        global.autoConvertOCType = function () {};
        global.convertOCNumberToString = function () {};
        global.releaseTmpObj = function () {};
        global.YES = 1;
        global.NO = 0;
        global.nsnull = standIn('NSNull');
        global.console = { log: function () {}, warn: function () {}, error: function () {}, info: function () {} };
        // Names the script used without defining them, in an earlier evaluation (the worker).
        var unknown = global.__hotpatchUnknownGlobals || [];
        delete global.__hotpatchUnknownGlobals;
        for (var u = 0; u < unknown.length; u++) global[unknown[u]] = standIn(unknown[u]);

        return function report() {
            return stringify({ classes: classes, required: required, protocols: protocols, includes: includes,
                               truncated: truncated });
        };
    })(this)
    """#
}
