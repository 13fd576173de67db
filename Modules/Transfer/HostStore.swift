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
    private let chunkCount = Atomic<Int>(0)
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
        idleTimeoutNs: Int64? = nil, keepIdle: () -> Bool = { true }, note: (String) -> Void = { _ in },
        lookStored: (StoredLook) -> Void = { _ in }
    ) throws(LinkError) {
        let deviceDir = deviceDirectory(device)
        do {
            try FileSystem.makeDirectory(deviceDir)
            try FileSystem.makeDirectory("\(deviceDir)/.partial")
        } catch { throw LinkError(.io, "\(deviceDir): \(error)") }
        var current: OpenPartial?
        let decompressor = ZstdDecompressor()
        // Two chunk-sized buffers for the life of the channel: each chunk as it arrives, and its bytes decompressed (or
        // a partial file re-read). A chunk is verified there and then written to its file with one pwrite: receiving
        // straight into a mapping of the file measured slower — its page faults cost more than the copy they saved
        // (stored bulk over loopback 177–192 MB/s mapped, 230 written; across 1 Gbit/s 91–92 and 101–104).
        let received = UnsafeMutableRawBufferPointer.allocate(byteCount: LinkMessage.maxChunkBytes, alignment: 64)
        let inflated = UnsafeMutableRawBufferPointer.allocate(byteCount: LinkMessage.maxChunkBytes, alignment: 64)
        defer {
            received.deallocate()
            inflated.deallocate()
        }
        // Bulk yields to control messages and to capture: lowest priority, and never on every core.
        ThreadPriority.lowerCurrent(nice: 19)
        ThreadPriority.confineToSpareCores()
        var served = 0
        // What this channel was offered, and what of it verified whole, per clip.
        var ledger = BulkLedger()
        // A first look being received (`look_offer`): kept in memory until whole, then written at once.
        var look: IncomingLook?
        while true {
            let receipt: Connection.BulkReceipt
            do {
                receipt = try bulk.receive(timeoutNs: idleTimeoutNs) {
                    (offset, compressed, count) throws(LinkError) -> UnsafeMutableRawBufferPointer in
                    if let l = look {
                        guard !compressed, count > 0, offset == UInt64(l.bytes.count), offset + UInt64(count) <= l.size
                        else {
                            throw LinkError(
                                .protocolViolation,
                                "chunk at \(offset) of \(count) bytes does not continue the first look of \(l.clipID) (\(l.bytes.count) of \(l.size) bytes)"
                            )
                        }
                        return received
                    }
                    guard let c = current else { throw LinkError(.protocolViolation, "chunk outside an offered file") }
                    guard offset == c.committed else {
                        throw LinkError(
                            .protocolViolation,
                            "chunk at offset \(offset) of \(c.file); committed offset is \(c.committed)")
                    }
                    guard compressed || (count > 0 && c.committed + UInt64(count) <= c.size) else {
                        throw LinkError(
                            .protocolViolation,
                            "chunk at \(offset) of \(count) bytes does not fit the offered size \(c.size) of \(c.file)")
                    }
                    return received
                }
            } catch  where error.code == .closed {
                return
            } catch  where error.code == .deadPeer {
                // Nothing came for `idleTimeoutNs` (between clips, or while the device's policy pauses a transfer).
                if keepIdle() { continue }
                throw LinkError(
                    .deadPeer,
                    "bulk channel of \(device) idle for \((idleTimeoutNs ?? 0) / 1_000_000) ms with no control channel up"
                )
            }
            switch receipt {
            case .chunk(_, let sum, _, let count) where look != nil:
                let bytes = UnsafeRawBufferPointer(rebasing: received[0..<count])
                guard XXH3.hash(bytes) == sum else {
                    throw LinkError(.malformed, "first look of \(look!.clipID): a chunk's XXH3 does not match")
                }
                look!.bytes += bytes
                try bulk.send(.chunkAck(committedOffset: UInt64(look!.bytes.count)))
                if UInt64(look!.bytes.count) == look!.size {
                    let l = look!
                    look = nil
                    let stored = storeLook(l, device: device, deviceDir: deviceDir)
                    try bulk.send(.lookStored(clipID: l.clipID, stored: stored.ok, reason: stored.reason))
                    if let path = stored.path {
                        lookStored(
                            StoredLook(device: device, clipID: l.clipID, path: path, t0Ns: l.t0Ns, zeroNs: l.zeroNs))
                    }
                }
            case .chunk(let offset, let sum, let compressed, let count):
                let c = current!  // the destination closure refused any chunk without an open file
                var bytes = UnsafeRawBufferPointer(rebasing: received[0..<count])
                if compressed {
                    do {
                        let n = try decompressor.decompress(bytes, into: inflated)
                        bytes = UnsafeRawBufferPointer(rebasing: inflated[0..<n])
                    } catch { throw LinkError(.malformed, "chunk at \(offset) of \(c.file): \(error)") }
                    guard c.committed + UInt64(bytes.count) <= c.size else {
                        throw LinkError(
                            .protocolViolation,
                            "chunk at \(offset) inflates to \(bytes.count) bytes, past the offered size \(c.size) of \(c.file)"
                        )
                    }
                }
                guard bytes.count > 0 else { throw LinkError(.malformed, "empty chunk at \(offset) of \(c.file)") }
                guard XXH3.hash(bytes) == sum else {
                    throw LinkError(.malformed, "chunk at \(offset) of \(c.file): XXH3 mismatch")
                }
                do {
                    // Only verified bytes reach the file. The chunk's log record goes after them: a record never
                    // describes bytes not yet written.
                    try c.fd.writeAll(bytes, at: Int64(offset))
                    var record = (UInt64(offset).littleEndian, UInt64(bytes.count).littleEndian, sum.littleEndian)
                    try withUnsafeBytes(of: &record) {
                        try c.logFD.writeAll($0, at: Int64(c.chunks * Self.logRecordSize))
                    }
                } catch { throw LinkError(.io, "\(c.path): \(error)") }
                c.hasher.update(bytes)
                c.committed += UInt64(bytes.count)
                c.chunks += 1
                chunkCount.add(1, ordering: .relaxed)
                served += 1
                if let stop = stopAfterChunks, served >= stop {
                    bulk.shutdownNow()
                    throw LinkError(.closed, "stopped after \(served) chunks (test)")
                }
                try bulk.send(.chunkAck(committedOffset: c.committed))
                // Writeback starts now, chunk by chunk, while the next chunk crosses the link, and what came before
                // is waited for: storing overlaps receiving instead of following it, the fsync when the file is whole
                // finds the data written, and a host with many devices never holds more than a chunk or two of each
                // dirty. (Across a 1 Gbit/s link, receiving into a mapping then: stored bulk 84–85 MB/s with
                // everything left to the fsync, 89–91 with this.) Failures here are not the verdict: the fsync at the
                // end is, and it reports them.
                try? c.fd.startWriteback(offset: Int64(offset), count: Int64(bytes.count))
                if offset > 0 { try? c.fd.awaitWriteback(offset: 0, count: Int64(offset)) }
                if c.committed == c.size {
                    // Whole: made durable once, then judged by the running XXH3 of every byte written.
                    var ok = c.hasher.digest == c.xxh3
                    var reason = ok ? "" : "whole-file XXH3 mismatch"
                    if ok {
                        do {
                            try c.fd.syncData()
                        } catch {
                            ok = false
                            reason = "fsync failed: \(error)"
                        }
                    }
                    if ok { ledger.verified(c.file, of: c.clip) }
                    try bulk.send(.fileComplete(clipID: c.clip, file: c.file, verified: ok, reason: reason))
                    if !ok {
                        try? FileSystem.unlink(c.path)
                        try? FileSystem.unlink(c.path + ".state")
                        try? FileSystem.unlink(c.path + ".chunks")
                    }
                    current = nil
                }
            case .message(let m):
                switch m {
                case .lookOffer(let clipID, let t0, let zero, let size, let xxh3):
                    try Self.checkClipID(clipID)
                    guard current == nil, look == nil else {
                        throw LinkError(.protocolViolation, "look_offer for \(clipID) while a file is being received")
                    }
                    guard size > 0, size <= Self.maxLookBytes else {
                        throw LinkError(
                            .oversize,
                            "first look of \(clipID): \(size) bytes (a first look is 1 byte to \(Self.maxLookBytes))")
                    }
                    guard t0.magnitude < DeviceLink.largestTimeNs.magnitude,
                        zero.magnitude < DeviceLink.largestTimeNs.magnitude
                    else {
                        throw LinkError(
                            .malformed,
                            "first look of \(clipID): t0 \(t0) or zero \(zero) is no reading of a capture clock")
                    }
                    look = IncomingLook(clipID: clipID, t0Ns: t0, zeroNs: zero, size: size, xxh3: xxh3, bytes: [])
                    look!.bytes.reserveCapacity(Int(size))
                case .offer(let clipID, let file, let size, let xxh3):
                    try Self.checkOffer(clipID: clipID, file: file, size: size)
                    current = nil
                    ledger.offer(file, of: clipID)
                    let final = "\(deviceDir)/\(clipID)"
                    if FileSystem.exists(final) {
                        // Confirmed before: the same bytes are confirmed again without a byte resent; other bytes under
                        // the same id are refused, loudly, and nothing stored is touched.
                        if let difference = Self.difference("\(final)/\(file)", size: size, xxh3: xxh3) {
                            let reason =
                                "clip \(clipID) is already on this host with other content (\(difference)); refused, nothing overwritten"
                            note("REFUSED \(file) of \(clipID) from \(device): \(reason)")
                            try bulk.send(.fileComplete(clipID: clipID, file: file, verified: false, reason: reason))
                        } else {
                            ledger.verified(file, of: clipID)
                            try bulk.send(.resumeAt(clipID: clipID, file: file, offset: size))
                        }
                        continue
                    }
                    let dir = "\(deviceDir)/.partial/\(clipID)"
                    let path = "\(dir)/\(file)"
                    let state = PartialState(size: size, xxh3: xxh3)
                    do {
                        try FileSystem.makeDirectory(dir)
                        let resuming =
                            (try? FileSystem.readSmallFile(path + ".state", limit: 64, regularFileOnly: true)).flatMap {
                                PartialState($0)
                            } == state
                        let fd = try FileDescriptor.open(path, O_RDWR | O_CREAT)
                        let logFD = try FileDescriptor.open(path + ".chunks", O_RDWR | O_CREAT)
                        var hasher = XXH3.Hasher()
                        var committed: UInt64 = 0
                        var chunks = 0
                        if resuming {
                            (committed, chunks) = Self.verifiedPrefix(
                                fd: fd, log: logFD, size: size, hasher: hasher, scratch: inflated)
                            if committed == size && hasher.digest != xxh3 {
                                // Whole by its log but not by its hash: nothing of it is trusted.
                                (committed, chunks, hasher) = (0, 0, XXH3.Hasher())
                            }
                        }
                        if !resuming || committed == 0 {
                            let stateFD = try FileDescriptor.open(path + ".state", O_RDWR | O_CREAT | O_TRUNC)
                            try state.bytes.withUnsafeBytes { try stateFD.writeAll($0, at: 0) }
                            try stateFD.syncData()
                        }
                        // Nothing beyond the verified prefix is trusted, in the file or in its log; the file is then
                        // extended to its full size, its space reserved.
                        try fd.truncate(Int64(committed))
                        try fd.truncate(Int64(size))
                        if size > committed { try fd.reserve(offset: Int64(committed), count: Int64(size - committed)) }
                        try logFD.truncate(Int64(chunks * Self.logRecordSize))
                        if committed == size {
                            // Whole already (an empty file, or one whose every chunk came before a restart): judged
                            // now, since no chunk will follow.
                            guard hasher.digest == xxh3 else {
                                throw LinkError(
                                    .malformed,
                                    String(
                                        format: "%@ of %@: %llu bytes whose XXH3 is not the offered %016llx", file,
                                        clipID, size, xxh3))
                            }
                            try fd.syncData()
                            ledger.verified(file, of: clipID)
                            try bulk.send(.resumeAt(clipID: clipID, file: file, offset: size))
                            continue
                        }
                        current = OpenPartial(
                            clip: clipID, file: file, path: path, size: size, xxh3: xxh3, committed: committed,
                            chunks: chunks,
                            hasher: hasher, fd: fd, logFD: logFD)
                        try bulk.send(.resumeAt(clipID: clipID, file: file, offset: committed))
                    } catch let e as LinkError {
                        throw e
                    } catch {
                        // Refused, not half-received: the device is told why, keeps the clip, and offers it again later.
                        // (Space is reserved here, so a full disk is found now and never mid-file: a chunk can't be
                        // acknowledged for bytes the filesystem could not keep.)
                        let reason = "the host cannot store \(file) of \(clipID) (\(size) bytes): \(error)"
                        note("refused \(file) of \(clipID) from \(device): \(error)")
                        try bulk.send(.fileComplete(clipID: clipID, file: file, verified: false, reason: reason))
                        current = nil
                    }
                case .clipDone(let clipID):
                    try Self.checkClipID(clipID)
                    let final = "\(deviceDir)/\(clipID)"
                    let partial = "\(deviceDir)/.partial/\(clipID)"
                    if let why = ledger.refusal(toConfirm: clipID, fileOpen: current != nil) {
                        throw LinkError(.protocolViolation, why)
                    }
                    let sent = ledger.files(of: clipID)
                    let good = sent
                    ledger.close(clipID)
                    do {
                        if FileSystem.exists(final) {
                            // Confirmed again only as the same clip: every file it holds was offered and matched.
                            let stored = Set(try FileSystem.list(final)).subtracting(Self.hostFiles)
                            guard stored == sent else {
                                throw LinkError(
                                    .protocolViolation,
                                    "clip \(clipID) is already on this host with files \(stored.sorted().joined(separator: ", ")); this channel offered \(sent.sorted().joined(separator: ", ")); nothing confirmed"
                                )
                            }
                        } else {
                            // Only the verified files go in: the chunk logs, and anything left from an earlier offer
                            // that did not verify on this channel, are removed first.
                            for name in (try? FileSystem.list(partial)) ?? [] where !good.contains(name) {
                                try FileSystem.unlink("\(partial)/\(name)")
                            }
                            var note = clockNote()
                            // What the clip really is, measured from its own file, beside what the device claimed.
                            for (k, v) in inspect("\(partial)/clip.mp4") { note[k] = v }
                            note["clipId"] = clipID
                            note["device"] = device
                            note["receivedHostNs"] = monotonicNowNs()
                            note["hostBoot"] = bootID  // host monotonic times compare only within one boot
                            note["receivedAt"] = ISO8601DateFormatter().string(from: Date())
                            let json = try JSONSerialization.data(
                                withJSONObject: note, options: [.prettyPrinted, .sortedKeys])
                            try json.write(to: URL(fileURLWithPath: "\(partial)/host-meta.json"))
                            try FileSystem.syncDirectory(partial)
                            try FileSystem.rename(partial, final)
                            try FileSystem.syncDirectory(deviceDir)
                            onClipStored?(final)
                        }
                    } catch let e as LinkError {
                        throw e
                    } catch { throw LinkError(.io, "\(final): \(error)") }
                    try bulk.send(.clipConfirmed(clipID: clipID, path: final))
                default:
                    throw LinkError(.protocolViolation, "\(m.name) on the bulk channel")
                }
            }
        }
    }
}
