import CLI
import Foundation
import Link
import Media
import Syscall
import Transfer

/// `ppc-host`: receives events and clips from many devices; keeps each device's clock relation.
let root = Command(
    "ppc-host", abstract: "Receive clips from ppc devices: many at once, resumable, verified, exactly once.",
    discussion: """
        Clips land in LIBRARY/<device>/<clipId>/, byte-identical to the device's, with host-meta.json (host-clock times).
        A Motion JPEG clip (a camera's MJPEG passed through) also gets view.mp4, an H.264 copy a browser plays, made
        off the receive path; the original is kept as sent. Copies a stop interrupted are made at the next start.
        """,
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
        let views = ViewCopies(log: { Terminal.out("ppc-host: \($0)") })
        do {
            server = try HostServer(host: String(parts[0]), port: port, library: library, policy: policy, onClipStored: { views.enqueue($0) })
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
        views.catchUp(library: library)
        server.run()
        return .success
    })

/// Viewing copies of Motion JPEG clips, made one at a time on a background queue at utility priority: never on a
/// receiving thread, never competing with one for long.
final class ViewCopies: Sendable {
    let queue = DispatchQueue(label: "ppc-host.view-copies", qos: .utility)
    let log: @Sendable (String) -> Void

    init(log: @escaping @Sendable (String) -> Void) { self.log = log }

    func enqueue(_ clipDirectory: String) {
        queue.async { [log] in
            let clip = clipDirectory + "/clip.mp4"
            let view = clipDirectory + "/view.mp4"
            guard !FileManager.default.fileExists(atPath: view), ViewTranscoder.needsViewingCopy(clip) else { return }
            do {
                let r = try ViewTranscoder.transcode(clip, to: view)
                log("view copy of \(clipDirectory): \(r.frames) frames of \(r.sourceCodec) \(r.width)x\(r.height)@\(r.framesPerSecond) → H.264 view.mp4 (original kept)")
            } catch {
                log("view copy of \(clipDirectory) failed: \(error) (the original clip is intact)")
            }
        }
    }

    /// Queues every stored clip that needs a copy and has none (a stop came before it was made).
    func catchUp(library: String) {
        let fm = FileManager.default
        for device in (try? fm.contentsOfDirectory(atPath: library)) ?? [] where !device.hasPrefix(".") {
            for clip in (try? fm.contentsOfDirectory(atPath: "\(library)/\(device)")) ?? [] where !clip.hasPrefix(".") {
                let dir = "\(library)/\(device)/\(clip)"
                if fm.fileExists(atPath: dir + "/clip.mp4"), !fm.fileExists(atPath: dir + "/view.mp4") { enqueue(dir) }
            }
        }
    }
}

MediaLog.quiet()
Signals.unblockAll()
MemoryPolicy.keepFreedMemory()
exit(Main.run(root, version: "ppc-host 0.1.0", arguments: Array(CommandLine.arguments.dropFirst())))
