import Foundation

/// Runs a built ppc binary and captures what it printed and its exit status.
public struct ToolRunner {
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// The package root, from this file's path (Tests/TestSupport/ToolRunner.swift).
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The path of a built tool.
    public static func executable(_ tool: String = "ppc-tool") -> String {
        productsDirectory.appendingPathComponent(tool).path
    }

    /// The directory holding the built products: the test bundle sits beside the executables.
    public static let productsDirectory: URL = {
        if let dir = ProcessInfo.processInfo.environment["PPC_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        var url = Bundle.main.bundleURL
        for _ in 0..<3 {
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("ppc-tool").path) { return url }
            url = url.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug")
    }()

    public static func fixture(_ path: String) -> String {
        packageRoot.appendingPathComponent("Tests/Fixtures/\(path)").path
    }
    public static func repoFile(_ path: String) -> String { packageRoot.appendingPathComponent(path).path }

    public static func run(_ arguments: [String], tool: String = "ppc-tool") throws -> Result {
        let r = try runProgram(productsDirectory.appendingPathComponent(tool).path, arguments)
        return Result(status: r.status, stdout: String(decoding: r.stdout, as: UTF8.self), stderr: r.stderr)
    }

    /// Where the tools a test runs keep their state: a directory of this test process's own.
    public static let testStateDirectory = NSTemporaryDirectory() + "ppc-test-state-\(getpid())"

    /// Runs any program (ffmpeg, ffprobe, …) by path or by name on PATH; stdout as bytes.
    public static func runProgram(_ program: String, _ arguments: [String]) throws -> (
        status: Int32, stdout: Data, stderr: String
    ) {
        let p = Process()
        if program.contains("/") {
            p.executableURL = URL(fileURLWithPath: program)
        } else {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        }
        p.arguments = program.contains("/") ? arguments : [program] + arguments
        p.currentDirectoryURL = packageRoot
        // Tools keep state under $XDG_STATE_HOME (identities, pairings, the encode capacity selftest records): tests
        // never write the person's own.
        p.environment = ProcessInfo.processInfo.environment.merging(["XDG_STATE_HOME": testStateDirectory]) { _, b in b
        }
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // Read both pipes to the end before waiting, so a large output cannot block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        p.waitUntilExit()
        var said = String(decoding: errData, as: UTF8.self)
        // Foundation gives a signal's number as the status (SIGHUP's is 1, an exit's too): a program a signal ended says
        // so, and its status is the shell's 128 + the signal, never a plain exit status.
        if p.terminationReason == .uncaughtSignal {
            said += "\n(\(program) was ended by signal \(p.terminationStatus))"
            return (128 + p.terminationStatus, outData, said)
        }
        return (p.terminationStatus, outData, said)
    }
}
