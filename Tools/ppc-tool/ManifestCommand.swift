import CLI
import Config
import Foundation
import Pipeline

/// `ppc-tool manifest check FILE`: validates a pipeline manifest against the plugin registry and Config.
enum ManifestCommand {
    static let command = Command(
        "manifest", abstract: "Check pipeline manifests.",
        subcommands: [
            Command(
                "check", abstract: "Validate a manifest; exit 0 when valid, 65 naming every problem when not.",
                options: [jsonFlag, setOption, measuredOption],
                arguments: [Argument("file", help: "The manifest (JSON).")], run: check)
        ])

    static func check(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        let overrides = try commandLineOverrides(inv)
        let loaded: Result<Manifest, ManifestError>
        do throws(ManifestError) {
            loaded = .success(try Manifest.load(path: path, registry: .default, extraOverrides: overrides))
        } catch {
            loaded = .failure(error)
        }
        switch loaded {
        case .success(let m):
            if inv.flag("json") {
                func stage(_ s: Manifest.Stage) -> [String: Any] {
                    ["plugin": s.plugin, "kind": s.kind.rawValue, "path": s.path]
                }
                try printJSON([
                    "valid": true, "session": m.session, "sources": m.sources.map(stage),
                    "encoder": m.encoder.map(stage) as Any? ?? NSNull(),
                    "detector": m.detector.map(stage) as Any? ?? NSNull(), "sinks": m.sinks.map(stage),
                    "overrides": m.overrides.map(\.key),
                ])
            } else {
                let stages = (m.sources + [m.encoder, m.detector].compactMap { $0 } + m.sinks).map(\.plugin)
                Terminal.out("\(path): valid — session '\(m.session)': \(stages.joined(separator: " → "))")
            }
            return .success
        case .failure(let error):
            if inv.flag("json") {
                try printJSON([
                    "valid": false,
                    "problems": error.problems.map {
                        [
                            "path": $0.path, "line": $0.line, "column": $0.column, "code": $0.code.name,
                            "message": $0.message,
                        ]
                    },
                ])
                return .dataError
            }
            throw CommandFailure.dataError(error.description)
        }
    }
}
