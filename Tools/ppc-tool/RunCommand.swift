import CLI
import Foundation
import Pipeline

/// `ppc-tool run MANIFEST`: runs a pipeline. Until the capture path exists it checks the manifest and says plainly
/// that nothing is captured yet, rather than pretending.
enum RunCommand {
    static let command = Command(
        "run", abstract: "Run a pipeline manifest (not yet built: checks the manifest and says so).",
        options: [Option.value("out", "dir", help: "Where the session's output goes."), setOption, measuredOption],
        arguments: [Argument("manifest", help: "The pipeline manifest (JSON).")], run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let path = inv.argument(0)!
        let overrides = try commandLineOverrides(inv)
        let m: Manifest
        do {
            m = try Manifest.load(path: path, registry: .default, extraOverrides: overrides)
        } catch {
            throw CommandFailure.dataError(error.description)
        }
        Terminal.out("\(path): valid manifest for session '\(m.session)'.")
        Terminal.err(
            "ppc-tool run: the capture pipeline (encoder → FragmentRing → Detect → clips) is not built yet; no frames were captured and no clips were written. See the open issues in the README's roadmap."
        )
        return .failure
    }
}
