import Config
import Foundation
import Syscall

/// A pipeline described in JSON: sources, encoder, detector, sinks, config overrides and a session name.
/// See `docs/manifest.md` for the format.
public struct Manifest: Sendable {
    /// One plugin named in a manifest, its parameters validated and defaults filled in.
    public struct Stage: Sendable {
        public let plugin: String
        public let kind: PluginKind
        /// Where it stands in the manifest, e.g. `sources[1]`.
        public let path: String
        public let parameters: PluginParameters
    }

    public let session: String
    public let description: String?
    public let sources: [Stage]
    public let encoder: Stage?
    public let detector: Stage?
    public let sinks: [Stage]
    /// The manifest's `config` section as overrides, in order.
    public let overrides: [Override]
    /// The configuration in force: the catalogue with the manifest's overrides and then `extraOverrides` applied.
    public let configuration: Configuration

    /// The largest manifest read (a pipeline is a few kilobytes; this bounds a wrong path such as /dev/zero).
    public static let maximumBytes = 4 << 20

    /// Reads and checks the manifest at `path`.
    public static func load(
        path: String, registry: PluginRegistry, extraOverrides: [Override] = []
    ) throws(ManifestError) -> Manifest {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readSmallFile(path, limit: maximumBytes)
        } catch {
            throw ManifestError(
                file: path,
                [
                    .init(
                        .unreadable, path: "", line: 0, column: 0,
                        "\(error.operation): \(String(cString: strerror(error.errno))) (errno \(error.errno))")
                ])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            // Where the first byte that is not UTF-8 stands, so a person can find it.
            var valid = 0
            var decoder = UTF8()
            var it = bytes.makeIterator()
            scan: while true {
                switch decoder.decode(&it) {
                case .scalarValue(let c): valid += UTF8.width(c)
                case .emptyInput, .error: break scan
                }
            }
            let before = bytes[0..<valid]
            let line = before.filter { $0 == 0x0A }.count + 1
            let column = valid - (before.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0) + 1
            throw ManifestError(
                file: path,
                [
                    .init(
                        .unreadable, path: "", line: line, column: column,
                        String(
                            format:
                                "not UTF-8 text: byte 0x%02X at offset %d is not valid UTF-8 (a manifest is JSON in UTF-8)",
                            valid < bytes.count ? bytes[valid] : 0, valid))
                ])
        }
        return try parse(text, file: path, registry: registry, extraOverrides: extraOverrides)
    }

    /// Parses and checks manifest `text`; `file` names it in messages. Throws with every problem found.
    public static func parse(
        _ text: String, file: String = "<manifest>", registry: PluginRegistry, extraOverrides: [Override] = []
    ) throws(ManifestError) -> Manifest {
        let root: JSONNode
        do {
            root = try JSONReader.parse(text)
        } catch {
            throw ManifestError(
                file: file,
                [
                    .init(
                        .malformedJSON, path: "", line: error.line, column: error.column,
                        "malformed JSON: \(error.message)")
                ])
        }
        var checker = Checker(registry: registry)
        let manifest = checker.manifest(root, extraOverrides: extraOverrides)
        if !checker.problems.isEmpty { throw ManifestError(file: file, checker.problems) }
        return manifest!
    }
}

/// A manifest was refused: every problem, each with its JSON path, line and column.
public struct ManifestError: Error, Sendable, CustomStringConvertible {
    public struct Problem: Sendable, CustomStringConvertible {
        public let code: Code
        /// JSON path of the offending value, e.g. `sources[0].params.fps`; empty for the document.
        public let path: String
        public let line: Int
        public let column: Int
        public let message: String

        init(_ code: Code, path: String, line: Int, column: Int, _ message: String) {
            self.code = code
            self.path = path
            self.line = line
            self.column = column
            self.message = message
        }

        public var description: String {
            let at = line > 0 ? "\(line):\(column): " : ""
            return path.isEmpty ? "\(at)\(message)" : "\(at)\(path): \(message)"
        }
    }

    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let unreadable = Code("unreadable")
        public static let malformedJSON = Code("malformed-json")
        public static let unknownKey = Code("unknown-key")
        public static let unknownPlugin = Code("unknown-plugin")
        public static let wrongType = Code("wrong-type")
        public static let missingRequired = Code("missing-required")
        public static let invalidValue = Code("invalid-value")
        public static let invalidConfig = Code("invalid-config")
    }

    public let file: String
    public let problems: [Problem]

    public init(file: String, _ problems: [Problem]) {
        self.file = file
        self.problems = problems
    }

    /// `FILE:LINE:COLUMN: …` where a problem has a place in the text, `FILE: …` where it has none.
    public var description: String { problems.map { "\(file):\($0.line > 0 ? "" : " ")\($0)" }.joined(separator: "\n") }
}

/// Walks the JSON tree, collecting every problem rather than stopping at the first.
struct Checker {
    let registry: PluginRegistry
    var problems: [ManifestError.Problem] = []

    init(registry: PluginRegistry) { self.registry = registry }

    mutating func add(_ code: ManifestError.Code, _ path: String, _ node: JSONNode?, _ message: String) {
        problems.append(.init(code, path: path, line: node?.line ?? 0, column: node?.column ?? 0, message))
    }

    static let topLevelKeys = ["session", "description", "sources", "encoder", "detector", "sinks", "config"]

    mutating func manifest(_ root: JSONNode, extraOverrides: [Override]) -> Manifest? {
        guard let members = root.members else {
            add(.wrongType, "", root, "expected an object at the top level, found \(root.value.typeName)")
            return nil
        }
        unknownKeys(members, allowed: Self.topLevelKeys, path: "")

        var session = ""
        if let s = root["session"] {
            if case .string(let v) = s.value, !v.isEmpty {
                // The name becomes part of every clip id and directory: a plain name, or refused.
                if let why = PlainName.problem(v, what: "session name") { add(.invalidValue, "session", s, why) }
                session = v
            } else {
                add(.wrongType, "session", s, "expected a non-empty string, found \(describe(s))")
            }
        } else {
            add(.missingRequired, "session", root, "missing required key 'session' (the session's name)")
        }
        var description: String?
        if let d = root["description"] {
            if case .string(let v) = d.value {
                description = v
            } else {
                add(.wrongType, "description", d, "expected string, found \(describe(d))")
            }
        }

        var sources: [Manifest.Stage] = []
        if let s = root["sources"] {
            if case .array(let items) = s.value {
                if items.isEmpty { add(.invalidValue, "sources", s, "needs at least one source") }
                for (i, item) in items.enumerated() {
                    if let stage = stage(item, path: "sources[\(i)]", kinds: PluginKind.sources, role: "source") {
                        sources.append(stage)
                    }
                }
                let video = sources.filter { $0.kind == .videoSource }
                if video.count > 1 {
                    add(
                        .invalidValue, "sources", s,
                        "\(video.count) video sources: one camera per device (two viewpoints are two devices)")
                }
            } else {
                add(.wrongType, "sources", s, "expected array, found \(describe(s))")
            }
        } else {
            add(.missingRequired, "sources", root, "missing required key 'sources' (an array of source plugins)")
        }

        let encoder = root["encoder"].flatMap { stage($0, path: "encoder", kinds: [.encoder], role: "encoder") }
        let detector = root["detector"].flatMap { stage($0, path: "detector", kinds: [.detector], role: "detector") }
        var sinks: [Manifest.Stage] = []
        if let s = root["sinks"] {
            if case .array(let items) = s.value {
                for (i, item) in items.enumerated() {
                    if let stage = stage(item, path: "sinks[\(i)]", kinds: [.sink], role: "sink") {
                        sinks.append(stage)
                    }
                }
            } else {
                add(.wrongType, "sinks", s, "expected array, found \(describe(s))")
            }
        }

        var overrides: [Override] = []
        var overrideNodes: [String: (path: String, node: JSONNode)] = [:]
        if let c = root["config"] {
            if let members = c.members {
                for (key, node) in members {
                    if let o = override(key: key, node: node) {
                        overrides.append(o)
                        overrideNodes[key] = ("config.\(key)", node)
                    }
                }
            } else {
                add(.wrongType, "config", c, "expected object, found \(describe(c))")
            }
        }
        var configuration: Configuration?
        do {
            let config = try Configuration(overrides: overrides + extraOverrides)
            for p in config.validate() {
                let at = p.key.flatMap { overrideNodes[$0] }
                add(.invalidConfig, at?.path ?? "config", at?.node ?? root["config"], p.message)
            }
            configuration = config
        } catch {
            for p in error.problems {
                let at = p.key.flatMap { overrideNodes[$0] }
                let code: ManifestError.Code = p.code == .unknownKey ? .unknownKey : .invalidConfig
                // The path already says where; drop the override's own origin prefix.
                var message = p.message
                if let at, message.hasPrefix("manifest \(at.path): ") {
                    message.removeFirst("manifest \(at.path): ".count)
                }
                add(code, at?.path ?? "config", at?.node ?? root["config"], message)
            }
        }
        guard problems.isEmpty, let configuration else { return nil }
        return Manifest(
            session: session, description: description, sources: sources, encoder: encoder, detector: detector,
            sinks: sinks, overrides: overrides, configuration: configuration)
    }

    /// `{"plugin": NAME, "params": {...}}` checked against the registry.
    mutating func stage(_ node: JSONNode, path: String, kinds: [PluginKind], role: String) -> Manifest.Stage? {
        guard let members = node.members else {
            add(.wrongType, path, node, "expected object {\"plugin\": …, \"params\": {…}}, found \(describe(node))")
            return nil
        }
        unknownKeys(members, allowed: ["plugin", "params"], path: path)
        guard let p = node["plugin"] else {
            add(.missingRequired, "\(path).plugin", node, "missing required key 'plugin'")
            return nil
        }
        guard case .string(let name) = p.value else {
            add(.wrongType, "\(path).plugin", p, "expected string, found \(describe(p))")
            return nil
        }
        guard let factory = registry.factory(named: name, kinds: kinds) else {
            let known = registry.descriptors(kinds: kinds).map(\.name)
            let hint = Spelling.nearest(to: name, among: known).map { " (did you mean '\($0)'?)" } ?? ""
            let list = known.isEmpty ? "none are registered" : "known: " + known.joined(separator: ", ")
            add(.unknownPlugin, "\(path).plugin", p, "unknown \(role) plugin '\(name)'\(hint); \(list)")
            return nil
        }
        let d = factory.descriptor
        var given: [(key: String, value: JSONNode)] = []
        if let params = node["params"] {
            if let m = params.members {
                given = m
            } else {
                add(.wrongType, "\(path).params", params, "expected object, found \(describe(params))")
            }
        }
        unknownKeys(given, allowed: d.parameters.map(\.name), path: "\(path).params")
        var values: [String: JSONValue] = [:]
        let before = problems.count
        for spec in d.parameters {
            let at = "\(path).params.\(spec.name)"
            guard let v = given.first(where: { $0.key == spec.name })?.value else {
                if let def = spec.defaultValue {
                    values[spec.name] = def
                } else {
                    add(
                        .missingRequired, at, node["params"] ?? node,
                        "missing required parameter '\(spec.name)' of \(d.name) (\(spec.summary))")
                }
                continue
            }
            if check(v, against: spec, path: at) { values[spec.name] = v.value }
        }
        guard problems.count == before else { return nil }
        let parameters = PluginParameters(values)
        if let why = d.check(parameters) {
            add(.invalidValue, "\(path).params", node["params"] ?? node, "\(d.name): \(why)")
            return nil
        }
        return Manifest.Stage(plugin: name, kind: d.kind, path: path, parameters: parameters)
    }

    /// True when `node` has the spec's type and bounds (`PluginParameterSpec.problem`); otherwise records why not, at the
    /// element of an array that is wrong.
    mutating func check(_ node: JSONNode, against spec: PluginParameterSpec, path: String) -> Bool {
        guard let (item, why) = spec.problem(with: node.value) else { return true }
        let wrongType = why.hasPrefix("expected ")
        if let item, case .array(let items) = node.value {
            add(wrongType ? .wrongType : .invalidValue, "\(path)[\(item)]", items[item], why)
        } else {
            add(wrongType ? .wrongType : .invalidValue, path, node, why)
        }
        return false
    }

    /// A `config` member: a bare value, or `{"value": V, "measurement": {"date": …, "instrument": …}, "note": …}`.
    mutating func override(key: String, node: JSONNode) -> Override? {
        let path = "config.\(key)"
        var valueNode = node
        var record: MeasurementRecord?
        var note: String?
        if let members = node.members {
            unknownKeys(members, allowed: ["value", "measurement", "note"], path: path)
            guard let v = node["value"] else {
                add(.missingRequired, "\(path).value", node, "missing required key 'value'")
                return nil
            }
            valueNode = v
            if let n = node["note"] {
                if case .string(let s) = n.value {
                    note = s
                } else {
                    add(.wrongType, "\(path).note", n, "expected string, found \(describe(n))")
                }
            }
            if let m = node["measurement"] {
                guard let mm = m.members else {
                    add(
                        .wrongType, "\(path).measurement", m,
                        "expected object {\"date\", \"instrument\"}, found \(describe(m))")
                    return nil
                }
                unknownKeys(mm, allowed: ["date", "instrument"], path: "\(path).measurement")
                guard case .string(let date)? = m["date"]?.value, case .string(let instrument)? = m["instrument"]?.value
                else {
                    add(
                        .missingRequired, "\(path).measurement", m,
                        "a measurement needs string 'date' (YYYY-MM-DD) and 'instrument'")
                    return nil
                }
                guard case .number(let n, _) = valueNode.value else {
                    add(
                        .wrongType, "\(path).value", valueNode,
                        "a measured value must be a number, found \(describe(valueNode))")
                    return nil
                }
                do {
                    record = try MeasurementRecord(value: n, date: date, instrument: instrument)
                } catch {
                    for p in error.problems { add(.invalidValue, "\(path).measurement", m, p.message) }
                    return nil
                }
            }
        }
        let value: ParameterValue
        switch valueNode.value {
        case .number(let d, true) where abs(d) < 9.0e18: value = .integer(Int64(d))
        case .number(let d, _): value = .real(d)
        case .bool(let b): value = .boolean(b)
        case .string(let s): value = .text(s)
        default:
            add(.wrongType, path, valueNode, "expected a number, boolean or string, found \(describe(valueNode))")
            return nil
        }
        return Override(key: key, value: value, measurement: record, note: note, origin: "manifest \(path)")
    }

    mutating func unknownKeys(_ members: [(key: String, value: JSONNode)], allowed: [String], path: String) {
        for (key, node) in members where !allowed.contains(key) {
            let at = path.isEmpty ? key : "\(path).\(key)"
            let hint = Spelling.nearest(to: key, among: allowed).map { " (did you mean '\($0)'?)" } ?? ""
            let valid = allowed.isEmpty ? "this takes no keys" : "valid keys: " + allowed.joined(separator: ", ")
            add(.unknownKey, at, node, "unknown key '\(key)'\(hint); \(valid)")
        }
    }

    func describe(_ node: JSONNode) -> String { PluginParameterSpec.describe(node.value) }
}
