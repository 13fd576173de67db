import Checksum
import Compression
import Foundation
import Glibc
import Link
import Syscall

/// The host's side of bulk transfer: clip bundles received into `LIBRARY/<device>/<clipId>/`, resumable.
///
/// Partial files live in `LIBRARY/<device>/.partial/<clipId>/` with a `<file>.state` beside each: its size, its whole
/// XXH3 and the committed offset, fsynced after every chunk. An offer for a file already partly here is answered with
/// the committed offset (the device resumes exactly there; a chunk at any other offset is refused, as in tus); a clip
/// already complete is confirmed again without a byte resent, so every clip arrives exactly once.
public final class HostStore: @unchecked Sendable {
    // @unchecked: each device's bulk channel is served by one thread; different devices use different directories.
    public let library: String
    /// Chunks refused or resent (for tests and the log).
    public private(set) var chunksReceived = 0

    public init(library: String) throws {
        self.library = library
        try FileSystem.makeDirectory(library)
    }

    /// The file being received: its descriptor, its state file's, and its committed state.
    final class OpenPartial {
        let clip: String
        let file: String
        let path: String
        var state: PartialState
        let fd: FileDescriptor
        let stateFD: FileDescriptor
        init(clip: String, file: String, path: String, state: PartialState, fd: consuming FileDescriptor, stateFD: consuming FileDescriptor) {
            self.clip = clip
            self.file = file
            self.path = path
            self.state = state
            self.fd = fd
            self.stateFD = stateFD
        }
    }

    /// `<file>.state`: 32 bytes, rewritten in place after every chunk — u64 size, u64 whole-file XXH3, u64 committed
    /// offset, u64 XXH3 of the first 24 bytes (a torn record is detected, and the transfer restarts at 0).
    struct PartialState {
        var size: UInt64
        var xxh3: UInt64
        var committed: UInt64

        var bytes: [UInt8] {
            var out: [UInt8] = []
            for v in [size, xxh3, committed] { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
            withUnsafeBytes(of: XXH3.hash(out).littleEndian) { out += $0 }
            return out
        }

        init(size: UInt64, xxh3: UInt64, committed: UInt64) {
            self.size = size
            self.xxh3 = xxh3
            self.committed = committed
        }

        init?(_ b: [UInt8]) {
            guard b.count == 32 else { return nil }
            func u(_ i: Int) -> UInt64 { b.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) } }
            guard XXH3.hash(Array(b[0..<24])) == u(3) else { return nil }
            self.init(size: u(0), xxh3: u(1), committed: u(2))
        }
    }

    func deviceDirectory(_ device: String) -> String { "\(library)/\(Self.safe(device))" }

    /// Names from the wire become path components only if they are plain names.
    static func safe(_ name: String) -> String {
        let cleaned = name.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" }
        let s = String(cleaned)
        return s.isEmpty || s.hasPrefix(".") ? "_" + s : s
    }

    /// Serves one device's bulk channel until it closes; `hostTime` stamps arrivals; `stopAfterChunks` (tests only)
    /// cuts the connection after that many chunks, as a host killed mid-transfer would.
    public func serve(_ bulk: Connection, device: String, clockNote: @escaping () -> [String: Any], stopAfterChunks: Int? = nil) throws(LinkError) {
        let deviceDir = deviceDirectory(device)
        do {
            try FileSystem.makeDirectory(deviceDir)
            try FileSystem.makeDirectory("\(deviceDir)/.partial")
        } catch { throw LinkError(.io, "\(deviceDir): \(error)") }
        var current: OpenPartial?
        let decompressor = ZstdDecompressor()
        var served = 0
        while true {
            let m: LinkMessage
            do { m = try bulk.receive() } catch where error.code == .closed { return }
            switch m {
            case .offer(let clipID, let file, let size, let xxh3):
                let clip = Self.safe(clipID)
                let name = Self.safe(file)
                let final = "\(deviceDir)/\(clip)"
                if FileSystem.exists("\(final)/\(name)") {
                    try bulk.send(.resumeAt(clipID: clipID, file: file, offset: size))  // already complete here
                    current = nil
                    continue
                }
                let dir = "\(deviceDir)/.partial/\(clip)"
                let path = "\(dir)/\(name)"
                var state = PartialState(size: size, xxh3: xxh3, committed: 0)
                do {
                    try FileSystem.makeDirectory(dir)
                    if let data = FileManager.default.contents(atPath: path + ".state"), let old = PartialState([UInt8](data)),
                        old.size == size, old.xxh3 == xxh3
                    {
                        state = old  // resume
                    }
                    let fd = try FileDescriptor.open(path, O_RDWR | O_CREAT)
                    try fd.truncate(Int64(state.committed))  // nothing beyond the committed offset is trusted
                    let stateFD = try FileDescriptor.open(path + ".state", O_RDWR | O_CREAT)
                    try state.bytes.withUnsafeBytes { try stateFD.writeAll($0, at: 0) }
                    try stateFD.syncData()
                    current = OpenPartial(clip: clipID, file: file, path: path, state: state, fd: fd, stateFD: stateFD)
                } catch { throw LinkError(.io, "\(path): \(error)") }
                try bulk.send(.resumeAt(clipID: clipID, file: file, offset: state.committed))
            case .chunk(let offset, let sum, let compressed, let data):
                guard let c = current else { throw LinkError(.protocolViolation, "chunk outside an offered file") }
                guard offset == c.state.committed else {
                    throw LinkError(.protocolViolation, "chunk at offset \(offset) of \(c.file); committed offset is \(c.state.committed)")
                }
                var bytes = data
                if compressed {
                    var out = [UInt8](repeating: 0, count: LinkMessage.maxChunkBytes)
                    do {
                        let n = try data.withUnsafeBytes { src in try out.withUnsafeMutableBytes { try decompressor.decompress(src, into: $0) } }
                        bytes = Array(out[0..<n])
                    } catch { throw LinkError(.malformed, "chunk at \(offset) of \(c.file): \(error)") }
                }
                guard XXH3.hash(bytes) == sum else { throw LinkError(.malformed, "chunk at \(offset) of \(c.file): XXH3 mismatch") }
                guard c.state.committed + UInt64(bytes.count) <= c.state.size else {
                    throw LinkError(.protocolViolation, "chunk at \(offset) runs past the offered size \(c.state.size) of \(c.file)")
                }
                do {
                    try bytes.withUnsafeBytes { try c.fd.writeAll($0, at: Int64(offset)) }
                    try c.fd.syncData()
                    c.state.committed += UInt64(bytes.count)
                    // The commit point: the offset is durable only once the bytes before it are.
                    try c.state.bytes.withUnsafeBytes { try c.stateFD.writeAll($0, at: 0) }
                    try c.stateFD.syncData()
                } catch { throw LinkError(.io, "\(c.path): \(error)") }
                chunksReceived += 1
                served += 1
                if let stop = stopAfterChunks, served >= stop {
                    bulk.shutdownNow()
                    throw LinkError(.closed, "stopped after \(served) chunks (test)")
                }
                try bulk.send(.chunkAck(committedOffset: c.state.committed))
                if c.state.committed == c.state.size {
                    let whole = (try? Data(contentsOf: URL(fileURLWithPath: c.path))).map { XXH3.hash([UInt8]($0)) }
                    let ok = whole == c.state.xxh3
                    try bulk.send(.fileComplete(clipID: c.clip, file: c.file, verified: ok, reason: ok ? "" : "whole-file XXH3 mismatch"))
                    if !ok {
                        try? FileSystem.unlink(c.path)
                        try? FileSystem.unlink(c.path + ".state")
                    }
                    current = nil
                }
            case .clipDone(let clipID):
                let clip = Self.safe(clipID)
                let final = "\(deviceDir)/\(clip)"
                let partial = "\(deviceDir)/.partial/\(clip)"
                do {
                    if !FileSystem.exists(final) {
                        for name in (try? FileSystem.list(partial)) ?? [] where name.hasSuffix(".state") { try FileSystem.unlink("\(partial)/\(name)") }
                        var note = clockNote()
                        note["clipId"] = clipID
                        note["device"] = device
                        note["receivedHostNs"] = monotonicNowNs()
                        note["receivedAt"] = ISO8601DateFormatter().string(from: Date())
                        let json = try JSONSerialization.data(withJSONObject: note, options: [.prettyPrinted, .sortedKeys])
                        try json.write(to: URL(fileURLWithPath: "\(partial)/host-meta.json"))
                        try FileSystem.syncDirectory(partial)
                        try FileSystem.rename(partial, final)
                        try FileSystem.syncDirectory(deviceDir)
                    }
                } catch { throw LinkError(.io, "\(final): \(error)") }
                try bulk.send(.clipConfirmed(clipID: clipID, path: final))
            default:
                throw LinkError(.protocolViolation, "\(m.name) on the bulk channel")
            }
        }
    }

}

/// The device's side: sends one bundle over the bulk channel, resuming where the host says, one file at a time.
public enum BundleSender {
    public struct Report: Sendable {
        public var remotePath: String
        public var bytesSent: Int
        public var chunksSent: Int
    }

    /// Files whose bytes compress (audio, metadata, the timeline) go zstd-compressed; video does not.
    static func compressible(_ name: String) -> Bool { name.hasSuffix(".wav") || name.hasSuffix(".json") || name.hasSuffix(".bin") }

    /// Chunks sent ahead of their acknowledgements. 1, measured: a window of 4 raised bulk from 69 to 77 MB/s (the host's
    /// fsync per chunk is the bound) but raised control p99 under bulk from 0.33 to 1.9 ms and would resend up to four
    /// chunks after a cut instead of one.
    public static let window = 1

    /// Sends `directory` as clip `clipID`; returns once the host confirms the verified whole.
    /// `budget` bytes may be sent per `tickNs` (link.payloadPumpBudgetBytes per link.pumpTickIntervalNs).
    public static func send(
        directory: String, clipID: String, over bulk: Connection, chunkBytes: Int = 256 * 1024, budget: Int = 4 << 20,
        tickNs: Int64 = 100_000_000
    ) throws -> Report {
        var report = Report(remotePath: "", bytesSent: 0, chunksSent: 0)
        let compressor = ZstdCompressor(level: 3)
        var tickStart = monotonicNowNs()
        var sentThisTick = 0
        for name in try FileSystem.list(directory).sorted() {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)")))
            try bulk.send(.offer(clipID: clipID, file: name, size: UInt64(bytes.count), xxh3: XXH3.hash(bytes)))
            guard case .resumeAt(_, _, let start) = try bulk.receive() else {
                throw LinkError(.protocolViolation, "expected resume_at for \(name)")
            }
            var offset = Int(start)
            if offset >= bytes.count { continue }  // the host has it whole already
            var inFlight: [Int] = []  // end offsets sent, not yet acknowledged
            func awaitAck() throws {
                let expected = inFlight.removeFirst()
                guard case .chunkAck(let committed) = try bulk.receive(), committed == UInt64(expected) else {
                    throw LinkError(.protocolViolation, "expected chunk_ack at \(expected) of \(name)")
                }
            }
            while offset < bytes.count {
                let end = min(bytes.count, offset + chunkBytes)
                let part = Array(bytes[offset..<end])
                var payload = part
                var compressed = false
                if compressible(name) {
                    var out = [UInt8](repeating: 0, count: ZstdCompressor.bound(part.count))
                    let n = try part.withUnsafeBytes { src in try out.withUnsafeMutableBytes { try compressor.compress(src, into: $0) } }
                    if n < part.count {
                        payload = Array(out[0..<n])
                        compressed = true
                    }
                }
                // Pace: no more than `budget` bytes per tick (transfer yields; capture degrades last).
                if sentThisTick + payload.count > budget {
                    let wait = tickStart + tickNs - monotonicNowNs()
                    if wait > 0 {
                        sleepNs(wait)
                    }
                    tickStart = monotonicNowNs()
                    sentThisTick = 0
                }
                if inFlight.count == window { try awaitAck() }
                try bulk.send(.chunk(offset: UInt64(offset), xxh3: XXH3.hash(part), compressed: compressed, data: payload))
                inFlight.append(end)
                sentThisTick += payload.count
                report.bytesSent += payload.count
                report.chunksSent += 1
                offset = end
            }
            while !inFlight.isEmpty { try awaitAck() }
            guard case .fileComplete(_, _, let verified, let reason) = try bulk.receive() else {
                throw LinkError(.protocolViolation, "expected file_complete for \(name)")
            }
            guard verified else { throw LinkError(.protocolViolation, "host could not verify \(name): \(reason)") }
        }
        try bulk.send(.clipDone(clipID: clipID))
        guard case .clipConfirmed(_, let path) = try bulk.receive() else {
            throw LinkError(.protocolViolation, "expected clip_confirmed for \(clipID)")
        }
        report.remotePath = path
        return report
    }
}
