import CLI
import Foundation
import Link
import Syscall
import Transfer

/// `ppc-host`: receives events and clips from many devices; keeps each device's clock relation.
let root = Command(
    "ppc-host", abstract: "Receive clips from ppc devices: many at once, resumable, verified, exactly once.",
    discussion: "Clips land in LIBRARY/<device>/<clipId>/, byte-identical to the device's, with host-meta.json (host-clock times).",
    options: [
        .value("listen", "host:port", help: "Where to listen (default 127.0.0.1:7600; port 0 picks one and prints it)."),
        .value("library", "dir", help: "Where clips are stored (default ./library)."),
        .value("ingest-policy", "name", help: "pinpoint-studio (≥1080 lines, ≥120 fps; default) or any."),
        .value("cut-bulk-after-chunks", "n", help: "Fault injection: cut every bulk connection after n chunks, as a crash would (tests resumption)."),
    ],
    run: { inv in
        let listen = inv.value("listen") ?? "127.0.0.1:7600"
        let parts = listen.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]), (0...65535).contains(port) else {
            throw CommandFailure.usage("--listen '\(listen)': expected HOST:PORT")
        }
        let policyName = inv.value("ingest-policy") ?? "pinpoint-studio"
        guard let policy = IngestPolicy.named(policyName) else {
            throw CommandFailure.usage("--ingest-policy '\(policyName)': known policies are pinpoint-studio, any")
        }
        let library = inv.value("library") ?? "library"
        let server: HostServer
        do {
            server = try HostServer(host: String(parts[0]), port: port, library: library, policy: policy)
        } catch {
            throw CommandFailure.failure("\(error)")
        }
        server.onLog = { Terminal.out("ppc-host: \($0)") }
        if let n = try inv.parsed("cut-bulk-after-chunks", as: Int.self) {
            guard n > 0 else { throw CommandFailure.usage("--cut-bulk-after-chunks must be positive") }
            server.stopBulkAfterChunks = n
            Terminal.out("ppc-host: fault injection: bulk connections are cut after \(n) chunks")
        }
        Terminal.out("ppc-host: listening on \(parts[0]):\(server.port), policy \(policy.name), library \(library)")
        server.run()
        return .success
    })

Signals.unblockAll()
MemoryPolicy.keepFreedMemory()
exit(Main.run(root, version: "ppc-host 0.1.0", arguments: Array(CommandLine.arguments.dropFirst())))
