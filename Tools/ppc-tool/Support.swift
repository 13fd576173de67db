import CLI
import Capture
import Config
import Foundation
import Pipeline
import Syscall

let ppcVersion = "0.1.0"

/// Prints a Foundation JSON object, keys sorted, to stdout.
func printJSON(_ object: Any) throws { try Terminal.json(object) }

/// The overrides `--set key=value` (and `--measured key=YYYY-MM-DD INSTRUMENT`) ask for, as a data error on bad input.
func commandLineOverrides(_ inv: Invocation) throws -> [Override] {
    var measured: [String: String] = [:]
    var out: [Override] = []
    var problems: [String] = []
    for m in inv.values("measured") {
        // A record file written by `ppc-tool measure` (it carries its own value, date, instrument and evidence).
        if !m.contains("="), m.hasSuffix(".json") || FileManager.default.fileExists(atPath: m) {
            do { out.append(try MeasurementFile.load(m)) } catch { problems += error.problems.map(\.message) }
            continue
        }
        guard let eq = m.firstIndex(of: "=") else {
            throw CommandFailure.usage("--measured '\(m)': expected KEY=YYYY-MM-DD INSTRUMENT")
        }
        measured[String(m[..<eq])] = String(m[m.index(after: eq)...])
    }
    for a in inv.values("set") {
        let key = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
        do {
            out.append(try Configuration.override(assignment: a, measured: measured.removeValue(forKey: key)))
        } catch {
            problems += error.problems.map(\.message)
        }
    }
    for key in measured.keys.sorted() {
        problems.append("--measured \(key): no --set \(key)=VALUE to attach the measurement to")
    }
    if !problems.isEmpty { throw CommandFailure.dataError(problems.joined(separator: "\n")) }
    return out
}

let setOption = Option.value("set", "key=value", repeatable: true, help: "Override a parameter (marked assumed).")
let measuredOption = Option.value(
    "measured", "file | key=YYYY-MM-DD instrument", repeatable: true,
    help:
        "A measurement record file (ppc-tool measure … --write FILE), or KEY=YYYY-MM-DD INSTRUMENT for a --set value: either makes it measured."
)
let jsonFlag = Option.json

/// Takes the output directory `out` for this process alone (`OUT/.lock`), or fails naming the process that holds it.
/// Refuses a directory that is not a run's output (no `ring/`, no `outbox/`): a mistyped path must not be made, locked
/// and reported as "nothing owed" — an operator would take that for every clip delivered.
func requireRunOutput(_ out: String) throws {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: out, isDirectory: &isDirectory), isDirectory.boolValue else {
        throw CommandFailure.dataError(
            "\(out): no such directory (expected a run's output directory, as given to ppc-tool run --out)")
    }
    guard
        FileManager.default.fileExists(atPath: "\(out)/ring") || FileManager.default.fileExists(atPath: "\(out)/outbox")
    else {
        throw CommandFailure.dataError("\(out): not a run's output directory (it holds neither ring/ nor outbox/)")
    }
}

func holdOutputDirectory(_ out: String, purpose: String) throws -> DirectoryLock {
    do {
        return try DirectoryLock.acquire(out, purpose: purpose)
    } catch let held as DirectoryLock.Held {
        throw CommandFailure.failure("refused: \(held)")
    } catch {
        throw CommandFailure.failure("cannot lock \(out): \(error)")
    }
}

/// The device id to use when none is given: this machine's host name when it is a plain name, else `machine-` and the
/// first 12 hex digits of /etc/machine-id (stable for the machine's life). Never a rewritten host name: rewriting
/// could make two machines one device. Throws a usage error saying what to pass when neither serves.
func defaultDeviceID() throws -> String {
    let host = ProcessInfo.processInfo.hostName
    if PlainName.isPlain(host) { return host }
    if let id = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8).trimmingCharacters(
        in: .whitespacesAndNewlines),
        id.count >= 12, PlainName.isPlain(id)
    {
        return "machine-" + id.prefix(12)
    }
    throw CommandFailure.usage(
        "\(PlainName.problem(host, what: "this machine's host name") ?? "this machine has no host name") and it has no /etc/machine-id; pass --device-id with a plain name"
    )
}

/// `--device-id` checked to be a plain name, or the default.
func deviceID(_ inv: Invocation, fallback: String? = nil) throws -> String {
    if let given = inv.value("device-id") {
        if let why = PlainName.problem(given, what: "--device-id") {
            throw CommandFailure.usage("\(why); pass --device-id with a plain name")
        }
        return given
    }
    if let fallback, PlainName.isPlain(fallback) { return fallback }
    return try defaultDeviceID()
}

/// A capture run's counts as a report states them (selftest and measure sustained share it).
func captureCounts(_ stats: CaptureSession.Statistics, requestedFps: Double) -> [String: Any] {
    [
        "requestedFps": requestedFps, "achievedFps": stats.achievedFramesPerSecond,
        "framesEncoded": stats.framesEncoded,
        "framesDroppedLate": stats.framesDroppedLate, "framesMissingAtSource": stats.framesMissingAtSource,
    ]
}
