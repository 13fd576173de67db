import CLI
import Config
import Foundation
import JSONInput
import Pipeline
import Syscall

/// `ppc-tool config show|explain|check`: the parameter registry, each value with its provenance.
enum ConfigCommand {
    static let manifestOption = Option.value("manifest", "file", help: "Apply a manifest's config section first.")

    static let command = Command(
        "config", abstract: "Show, explain and check parameters and their provenance.",
        subcommands: [
            Command(
                "show", abstract: "Every parameter: value, unit, provenance mark and note.",
                options: [jsonFlag, manifestOption, setOption, measuredOption], run: show),
            Command(
                "explain", abstract: "One parameter: its value, where it came from, its arithmetic.",
                options: [manifestOption, setOption, measuredOption],
                arguments: [Argument("key", help: "A parameter key, e.g. capture.ringSeconds.")], run: explain),
            Command(
                "check", abstract: "Validate a configuration; exit 0 when valid, 65 when not.",
                options: [jsonFlag, manifestOption, setOption, measuredOption], run: check),
        ])

    /// The configuration a command line asks for: the manifest's overrides, then `--set`s.
    static func configuration(_ inv: Invocation) throws -> Configuration {
        let overrides = try commandLineOverrides(inv)
        if let path = inv.value("manifest") {
            do {
                return try Manifest.load(path: path, registry: .default, extraOverrides: overrides).configuration
            } catch {
                throw CommandFailure.dataError(error.description)
            }
        }
        do {
            return try Configuration(overrides: overrides)
        } catch {
            throw CommandFailure.dataError(error.description)
        }
    }

    static func show(_ inv: Invocation) throws -> ExitCode {
        let config = try configuration(inv)
        if inv.flag("json") {
            try printJSON(config.parameters.map(\.jsonObject))
            return .success
        }
        let keyWidth = config.parameters.map(\.key.count).max() ?? 0
        let valueWidth = config.parameters.map(\.shown.count).max() ?? 0
        for p in config.parameters {
            let key = p.key.padding(toLength: keyWidth, withPad: " ", startingAt: 0)
            let value = p.shown.padding(toLength: valueWidth, withPad: " ", startingAt: 0)
            Terminal.out("\(key)  \(value)  \(p.provenance.mark.letter)  \(p.note)")
        }
        Terminal.out("\nM measured · V vendor · D derived · A assumed")
        Terminal.out("\nContradictions in the source documents:")
        for c in config.contradictions { Terminal.out("  ⚠ \(c.text)") }
        return .success
    }

    static func explain(_ inv: Invocation) throws -> ExitCode {
        let config = try configuration(inv)
        let key = inv.argument(0)!
        guard let p = config[key] else {
            let hint =
                Spelling.nearest(to: key, among: config.parameters.map(\.key)).map { " (did you mean \($0)?)" } ?? ""
            throw CommandFailure.dataError("unknown parameter '\(key)'\(hint)")
        }
        Terminal.out(p.explanation)
        for c in config.contradictions where c.keys.contains(key) { Terminal.out("  ⚠ \(c.text)") }
        // A value from a record file: the evidence behind it (the sweep, the run, the claps), as the instrument wrote it.
        for file in inv.values("measured") where !file.contains("=") {
            guard
                let data =
                    (try? FileSystem.readSmallFile(file, limit: MeasurementFile.maxRecordBytes, regularFileOnly: true))
                    .map({ Data($0) }),
                let o = try? JSONInput.object(data), o["parameter"] as? String == key,
                let evidence = o["evidence"]
            else { continue }
            Terminal.out("  evidence (\(file)):")
            let text =
                (try? JSONSerialization.data(
                    withJSONObject: evidence, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
                .map { String(decoding: $0, as: UTF8.self) } ?? "\(evidence)"
            for line in text.split(separator: "\n") { Terminal.out("    " + line) }
        }
        return .success
    }

    static func check(_ inv: Invocation) throws -> ExitCode {
        let config: Configuration
        do {
            config = try configuration(inv)
        } catch let failure as CommandFailure where failure.exitCode == .dataError {
            if inv.flag("json") {
                try printJSON(["valid": false, "problems": failure.message.split(separator: "\n").map(String.init)])
                return .dataError
            }
            throw failure
        }
        let problems = config.validate()
        if inv.flag("json") {
            try printJSON([
                "valid": problems.isEmpty,
                "problems": problems.map { ["key": $0.key ?? "", "code": $0.code.name, "message": $0.message] },
                "contradictions": config.contradictions.map { ["id": $0.id, "keys": $0.keys, "text": $0.text] },
            ])
        } else if problems.isEmpty {
            Terminal.out("configuration is valid (\(config.parameters.count) parameters)")
            for c in config.contradictions { Terminal.out("  ⚠ \(c.text)") }
        } else {
            for p in problems { Terminal.err("invalid: \(p.message)") }
        }
        return problems.isEmpty ? .success : .dataError
    }
}
