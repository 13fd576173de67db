import Checksum
import Compression
import Foundation
import Glibc
import Link
import Synchronization
import Syscall

/// The host's side of bulk transfer: clip bundles received into `LIBRARY/<device>/<clipId>/`, resumable.
///
/// Partial files live in `LIBRARY/<device>/.partial/<clipId>/`. Beside each: `<file>.state` (its size and whole XXH3,
/// written once at the offer) and `<file>.chunks`, the chunk log — one 24-byte record (offset, length, XXH3) per chunk
/// written, after the chunk's bytes. A chunk is acknowledged once written (a killed host process loses nothing it
/// acknowledged: the bytes are in the page cache); nothing is fsynced per chunk. The commit record is the chunk log
/// *as verified*: on an offer for a partial file, every logged chunk is re-read and re-hashed, and the committed offset
/// is the end of the last one whose bytes still match — so after a power cut, where unsynced bytes may be lost or
/// torn, the device resumes from what is really there. Each file is fsynced once, when whole, before the host says it
/// is verified; the clip directory is renamed into place and its parent fsynced before the clip is confirmed, and only
/// then does the device release it. A chunk at any other offset than the committed one is refused (as in tus); a
/// clip already complete is confirmed again without a byte resent, so every clip arrives exactly once.
///
/// Nothing from the wire is trusted: a clip id must be a plain name, a file one of ``bundleFiles``, a size at most
/// ``maxFileBytes``. A clip is confirmed only when every file offered for it on this channel was verified whole. A clip id
/// already confirmed here is confirmed again only when every offered file's size and XXH3 match what is stored;
/// otherwise the file is refused with the reason and nothing is overwritten.
public final class HostStore: Sendable {
    // Each device's bulk channel is served by one thread; different devices use different directories.
    public let library: String
    let chunkCount = Atomic<Int>(0)
    /// Chunks received, over every channel (for tests and the log).
    public var chunksReceived: Int { chunkCount.load(ordering: .relaxed) }

    /// The files a clip bundle may hold; any other name offered is refused.
    public static let bundleFiles: Set<String> = ["clip.mp4", "audio.wav", "index.bin", "meta.json"]
    /// The largest file a host accepts (1 TiB): a size beyond it is refused at the offer.
    public static let maxFileBytes: UInt64 = 1 << 40

    /// Files the host itself adds to a clip's folder: its own notes, a viewing copy of a Motion JPEG clip, and what a
    /// person said of it and drew on it (with the temporary file `FileSystem.writeAtomically` leaves if the host dies mid-write). They
    /// are not part of what a device sent, so a clip offered again is compared without them.
    public static let hostFiles: Set<String> = [
        "host-meta.json", "view.mp4", "annotations.json", "annotations.json.tmp", "drawings.json", "drawings.json.tmp",
        "swing.json", "swing.json.tmp", "thumb.jpg", "thumb.jpg.tmp",
    ]

    /// Called (on the receiving thread, after the clip's folder is durably in place) with each newly stored clip's
    /// folder; it must return at once — work such as a viewing copy is queued elsewhere, off the receive path.
    let onClipStored: (@Sendable (String) -> Void)?

    public init(library: String, onClipStored: (@Sendable (String) -> Void)? = nil) throws {
        self.library = library
        self.onClipStored = onClipStored
        try FileSystem.makeDirectory(library)
    }

    /// The file being received: its descriptors, its running XXH3, and where it stands.
    final class OpenPartial {
        let clip: String
        let file: String
        let path: String
        let size: UInt64
        let xxh3: UInt64
        var committed: UInt64
        var chunks: Int
        let hasher: XXH3.Hasher
        let fd: FileDescriptor
        let logFD: FileDescriptor
        init(
            clip: String, file: String, path: String, size: UInt64, xxh3: UInt64, committed: UInt64, chunks: Int,
            hasher: XXH3.Hasher, fd: consuming FileDescriptor, logFD: consuming FileDescriptor
        ) {
            self.clip = clip
            self.file = file
            self.path = path
            self.size = size
            self.xxh3 = xxh3
            self.committed = committed
            self.chunks = chunks
            self.hasher = hasher
            self.fd = fd
            self.logFD = logFD
        }
    }

    /// `<file>.state`: 32 bytes — u64 size, u64 whole-file XXH3, u64 reserved (0), u64 XXH3 of the first 24 bytes (a
    /// torn record is detected, and the transfer restarts at 0).
    struct PartialState: Equatable {
        var size: UInt64
        var xxh3: UInt64

        var bytes: [UInt8] {
            var out: [UInt8] = []
            for v in [size, xxh3, 0] { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
            withUnsafeBytes(of: XXH3.hash(out).littleEndian) { out += $0 }
            return out
        }

        init(size: UInt64, xxh3: UInt64) {
            self.size = size
            self.xxh3 = xxh3
        }

        init?(_ b: [UInt8]) {
            guard b.count == 32 else { return nil }
            func u(_ i: Int) -> UInt64 {
                b.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) }
            }
            guard XXH3.hash(Array(b[0..<24])) == u(3) else { return nil }
            self.init(size: u(0), xxh3: u(1))
        }
    }

    static let logRecordSize = 24

    /// `LIBRARY/<device>`; the device id was checked to be a plain name at hello, so it is one path component.
    func deviceDirectory(_ device: String) -> String { "\(library)/\(device)" }

    /// Why the stored file `path` is not `size` bytes with XXH3 `xxh3`, or nil when it is.
    static func difference(_ path: String, size: UInt64, xxh3: UInt64) -> String? {
        guard FileSystem.exists(path) else { return "it has no \(path.split(separator: "/").last ?? "")" }
        do {
            let fd = try FileDescriptor.open(path, O_RDONLY)
            let stored = try fd.size()
            guard UInt64(stored) == size else { return "\(fd.path) is \(stored) bytes, the offer \(size)" }
            let map = try FileMapping(fd, length: Int(stored), writable: false)
            let sum = XXH3.hash(UnsafeRawBufferPointer(map.bytes))
            return sum == xxh3 ? nil : String(format: "%@ has XXH3 %016llx, the offer %016llx", fd.path, sum, xxh3)
        } catch {
            return "\(path) cannot be read: \(error)"
        }
    }

    /// Refuses a clip id that is not a plain name (it becomes a directory name).
    static func checkClipID(_ clipID: String) throws(LinkError) {
        if let why = PlainName.problem(clipID, what: "clip id", maxLength: PlainName.maxClipIDLength) {
            throw LinkError(.protocolViolation, why)
        }
    }

    /// Refuses an offer whose clip id, file name or size the host will not take.
    /// The largest first look taken: 64 MiB (two seconds of 1080p at 50 Mbit/s is 12.5 MB; derived, with room).
    public static let maxLookBytes: UInt64 = 64 << 20
    /// First looks kept per device (`LIBRARY/<device>/.looks/`): the newest; each is worth only its speed, and the clip
    /// it was a look at follows in seconds.
    public static let looksKept = 16

    /// A first look as it is received.
    struct IncomingLook {
        let clipID: String
        let t0Ns: Int64
        let zeroNs: Int64
        let size: UInt64
        let xxh3: UInt64
        var bytes: [UInt8]
    }

    /// A first look stored whole: where, and its t0 and first frame on the device's clock.
    public struct StoredLook: Sendable {
        public let device: String
        public let clipID: String
        public let path: String
        public let t0Ns: Int64
        public let zeroNs: Int64
    }

    /// Writes a first look received whole as `LIBRARY/<device>/.looks/<clipId>.mp4` (whole or not at all), keeping the
    /// newest `looksKept`; what it says to the device.
    func storeLook(_ l: IncomingLook, device: String, deviceDir: String) -> (ok: Bool, reason: String, path: String?) {
        guard XXH3.hash(l.bytes) == l.xxh3 else {
            return (false, "the whole first look's XXH3 is not the offered one", nil)
        }
        let dir = "\(deviceDir)/.looks"
        let path = "\(dir)/\(l.clipID).mp4"
        do {
            try FileSystem.makeDirectory(dir)
            try FileSystem.writeAtomically(l.bytes, to: path)
            let all = try FileSystem.list(dir).filter { $0.hasSuffix(".mp4") }
            if all.count > Self.looksKept {
                let byAge = all.map {
                    (
                        $0,
                        (try? FileManager.default.attributesOfItem(atPath: "\(dir)/\($0)")[.modificationDate] as? Date)
                            ?? .distantPast
                    )
                }
                for (name, _) in byAge.sorted(by: { $0.1 < $1.1 }).prefix(all.count - Self.looksKept) {
                    try? FileSystem.unlink("\(dir)/\(name)")
                }
            }
        } catch { return (false, "the host could not keep the first look: \(error)", nil) }
        return (true, "", path)
    }

    static func checkOffer(clipID: String, file: String, size: UInt64) throws(LinkError) {
        try checkClipID(clipID)
        guard bundleFiles.contains(file) else {
            throw LinkError(
                .protocolViolation,
                "offer of '\(file)' for \(clipID): a clip bundle holds only \(bundleFiles.sorted().joined(separator: ", "))"
            )
        }
        guard size <= maxFileBytes else {
            throw LinkError(
                .oversize, "offer of \(file) for \(clipID): \(size) bytes is over the host's limit of \(maxFileBytes)")
        }
    }

    /// Walks the chunk log of a partial file, re-hashing each chunk's bytes; returns how far they are intact and how
    /// many chunks that is, with `hasher` fed the intact prefix.
    static func verifiedPrefix(
        fd: borrowing FileDescriptor, log: borrowing FileDescriptor, size: UInt64, hasher: XXH3.Hasher,
        scratch: UnsafeMutableRawBufferPointer
    ) -> (committed: UInt64, chunks: Int) {
        var committed: UInt64 = 0
        var chunks = 0
        var record = (UInt64(0), UInt64(0), UInt64(0))
        while true {
            let got = withUnsafeMutableBytes(of: &record) { r in
                (try? log.read(into: r, at: Int64(chunks * logRecordSize))) ?? 0
            }
            guard got == logRecordSize else { break }
            let offset = UInt64(littleEndian: record.0)
            let sum = UInt64(littleEndian: record.2)
            // A record is disk state: a length that does not fit the scratch buffer ends the trusted prefix.
            guard let length = Int(exactly: UInt64(littleEndian: record.1)), length > 0, length <= scratch.count,
                offset == committed, committed + UInt64(length) <= size
            else { break }
            let chunk = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length])
            guard (try? fd.read(into: chunk, at: Int64(offset))) == length,
                XXH3.hash(UnsafeRawBufferPointer(chunk)) == sum
            else { break }
            hasher.update(UnsafeRawBufferPointer(chunk))
            committed += UInt64(length)
            chunks += 1
        }
        return (committed, chunks)
    }

    /// Serves one device's bulk channel until it closes; `clockNote` describes the device's clock for host-meta.json,
    /// `inspect` what a received clip.mp4 measures against the ingest policy (also for host-meta.json);
    /// `stopAfterChunks` (tests only) cuts the connection after that many chunks, as a host killed mid-transfer would.
    /// A channel idle for `idleTimeoutNs` is closed unless `keepIdle()` says its device is still there (its control
    /// channel is up): an idle bulk channel on its own never holds a thread.
    public func serve(
        _ bulk: Connection, device: String, clockNote: @escaping () -> [String: Any],
        inspect: @escaping (String) -> [String: Any] = { _ in [:] }, stopAfterChunks: Int? = nil,
        idleTimeoutNs: Int64? = nil, keepIdle: @escaping () -> Bool = { true },
        note: @escaping (String) -> Void = { _ in }, lookStored: @escaping (StoredLook) -> Void = { _ in }
    ) throws(LinkError) {
        let deviceDir = deviceDirectory(device)
        do {
            try FileSystem.makeDirectory(deviceDir)
            try FileSystem.makeDirectory("\(deviceDir)/.partial")
        } catch { throw LinkError(.io, "\(deviceDir): \(error)") }
        // Bulk yields to control messages and to capture: lowest priority, and never on every core.
        ThreadPriority.lowerCurrent(nice: 19)
        ThreadPriority.confineToSpareCores()
        let settings = ServeSettings(
            clockNote: clockNote, inspect: inspect, stopAfterChunks: stopAfterChunks, idleTimeoutNs: idleTimeoutNs,
            keepIdle: keepIdle, note: note, lookStored: lookStored)
        try BulkChannel(store: self, bulk: bulk, device: device, deviceDir: deviceDir, settings: settings).run()
    }

    /// What `serve` is told beside its channel: what to note of each clip, how to inspect it, when to give up on an
    /// idle channel, and whom to tell.
    struct ServeSettings {
        let clockNote: () -> [String: Any]
        let inspect: (String) -> [String: Any]
        let stopAfterChunks: Int?
        let idleTimeoutNs: Int64?
        let keepIdle: () -> Bool
        let note: (String) -> Void
        let lookStored: (StoredLook) -> Void
    }

}
