import Checksum
import Compression
import Foundation
import Link
import Syscall

/// One device's bulk channel on the host, from its first message to its close: the file being received and a first
/// look being received, what the channel was offered and what verified whole (its ledger), and the two chunk-sized
/// buffers it works in. One method per message; `run` reads them and hands each to its method.
final class BulkChannel {
    let store: HostStore
    let bulk: Connection
    let device: String
    let deviceDir: String
    let settings: HostStore.ServeSettings
    var current: HostStore.OpenPartial?
    /// A first look being received (`look_offer`): kept in memory until whole, then written at once.
    var look: HostStore.IncomingLook?
    /// What this channel was offered, and what of it verified whole, per clip.
    var ledger = BulkLedger()
    var served = 0
    let decompressor = ZstdDecompressor()
    // Two chunk-sized buffers for the life of the channel: each chunk as it arrives, and its bytes decompressed (or a
    // partial file re-read). A chunk is verified there and then written to its file with one pwrite: receiving straight
    // into a mapping of the file measured slower — its page faults cost more than the copy they saved (stored bulk over
    // loopback 177–192 MB/s mapped, 230 written; across 1 Gbit/s 91–92 and 101–104).
    let received = UnsafeMutableRawBufferPointer.allocate(byteCount: LinkMessage.maxChunkBytes, alignment: 64)
    let inflated = UnsafeMutableRawBufferPointer.allocate(byteCount: LinkMessage.maxChunkBytes, alignment: 64)

    init(store: HostStore, bulk: Connection, device: String, deviceDir: String, settings: HostStore.ServeSettings) {
        self.store = store
        self.bulk = bulk
        self.device = device
        self.deviceDir = deviceDir
        self.settings = settings
    }

    deinit {
        received.deallocate()
        inflated.deallocate()
    }

    /// Serves the channel until the device closes it (or it fails: the error says why).
    func run() throws(LinkError) {
        while true {
            guard let receipt = try receive() else { return }
            switch receipt {
            case .chunk(_, let sum, _, let count) where look != nil: try lookChunk(sum: sum, count: count)
            case .chunk(let offset, let sum, let compressed, let count):
                try fileChunk(offset: offset, sum: sum, compressed: compressed, count: count)
            case .message(.lookOffer(let clipID, let t0, let zero, let size, let xxh3)):
                try lookOffer(clipID: clipID, t0: t0, zero: zero, size: size, xxh3: xxh3)
            case .message(.offer(let clipID, let file, let size, let xxh3)):
                try offer(clipID: clipID, file: file, size: size, xxh3: xxh3)
            case .message(.clipDone(let clipID)): try clipDone(clipID)
            case .message(let m): throw LinkError(.protocolViolation, "\(m.name) on the bulk channel")
            }
        }
    }

    /// The next chunk or message; nil when the device closed the channel. A chunk is received only into its place: the
    /// look or the file it continues, at the offset committed.
    func receive() throws(LinkError) -> Connection.BulkReceipt? {
        let idleTimeoutNs = settings.idleTimeoutNs
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
                return nil
            } catch  where error.code == .deadPeer {
                // Nothing came for `idleTimeoutNs` (between clips, or while the device's policy pauses a transfer).
                if settings.keepIdle() { continue }
                throw LinkError(
                    .deadPeer,
                    "bulk channel of \(device) idle for \((idleTimeoutNs ?? 0) / 1_000_000) ms with no control channel up"
                )
            }
            return receipt
        }
    }

    /// A chunk of the first look being received.
    func lookChunk(sum: UInt64, count: Int) throws(LinkError) {
        let bytes = UnsafeRawBufferPointer(rebasing: received[0..<count])
        guard XXH3.hash(bytes) == sum else {
            throw LinkError(.malformed, "first look of \(look!.clipID): a chunk's XXH3 does not match")
        }
        look!.bytes += bytes
        try bulk.send(.chunkAck(committedOffset: UInt64(look!.bytes.count)))
        if UInt64(look!.bytes.count) == look!.size {
            let l = look!
            look = nil
            let stored = store.storeLook(l, device: device, deviceDir: deviceDir)
            try bulk.send(.lookStored(clipID: l.clipID, stored: stored.ok, reason: stored.reason))
            if let path = stored.path {
                settings.lookStored(
                    HostStore.StoredLook(device: device, clipID: l.clipID, path: path, t0Ns: l.t0Ns, zeroNs: l.zeroNs))
            }
        }
    }

    /// A chunk of the file being received: verified, written, acknowledged; the file judged when whole.
    func fileChunk(offset: UInt64, sum: UInt64, compressed: Bool, count: Int) throws(LinkError) {
        let c = current!  // the receipt refused any chunk without an open file
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
                try c.logFD.writeAll($0, at: Int64(c.chunks * HostStore.logRecordSize))
            }
        } catch { throw LinkError(.io, "\(c.path): \(error)") }
        c.hasher.update(bytes)
        c.committed += UInt64(bytes.count)
        c.chunks += 1
        store.chunkCount.add(1, ordering: .relaxed)
        served += 1
        if let stop = settings.stopAfterChunks, served >= stop {
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
    }

    /// `look_offer`: a first look follows, whole in memory before it is written.
    func lookOffer(clipID: String, t0: Int64, zero: Int64, size: UInt64, xxh3: UInt64) throws(LinkError) {
        try HostStore.checkClipID(clipID)
        guard current == nil, look == nil else {
            throw LinkError(.protocolViolation, "look_offer for \(clipID) while a file is being received")
        }
        guard size > 0, size <= HostStore.maxLookBytes else {
            throw LinkError(
                .oversize,
                "first look of \(clipID): \(size) bytes (a first look is 1 byte to \(HostStore.maxLookBytes))")
        }
        guard t0.magnitude < DeviceLink.largestTimeNs.magnitude,
            zero.magnitude < DeviceLink.largestTimeNs.magnitude
        else {
            throw LinkError(
                .malformed,
                "first look of \(clipID): t0 \(t0) or zero \(zero) is no reading of a capture clock")
        }
        look = HostStore.IncomingLook(clipID: clipID, t0Ns: t0, zeroNs: zero, size: size, xxh3: xxh3, bytes: [])
        look!.bytes.reserveCapacity(Int(size))
    }

    /// `offer`: a file follows — confirmed again if already stored, resumed from its verified prefix, or refused.
    func offer(clipID: String, file: String, size: UInt64, xxh3: UInt64) throws(LinkError) {
        try HostStore.checkOffer(clipID: clipID, file: file, size: size)
        current = nil
        ledger.offer(file, of: clipID)
        let final = "\(deviceDir)/\(clipID)"
        if FileSystem.exists(final) {
            // Confirmed before: the same bytes are confirmed again without a byte resent; other bytes under
            // the same id are refused, loudly, and nothing stored is touched.
            if let difference = HostStore.difference("\(final)/\(file)", size: size, xxh3: xxh3) {
                let reason =
                    "clip \(clipID) is already on this host with other content (\(difference)); refused, nothing overwritten"
                settings.note("REFUSED \(file) of \(clipID) from \(device): \(reason)")
                try bulk.send(.fileComplete(clipID: clipID, file: file, verified: false, reason: reason))
            } else {
                ledger.verified(file, of: clipID)
                try bulk.send(.resumeAt(clipID: clipID, file: file, offset: size))
            }
            return
        }
        let dir = "\(deviceDir)/.partial/\(clipID)"
        let path = "\(dir)/\(file)"
        let state = HostStore.PartialState(size: size, xxh3: xxh3)
        do {
            try FileSystem.makeDirectory(dir)
            let resuming =
                (try? FileSystem.readSmallFile(path + ".state", limit: 64, regularFileOnly: true)).flatMap {
                    HostStore.PartialState($0)
                } == state
            let fd = try FileDescriptor.open(path, O_RDWR | O_CREAT)
            let logFD = try FileDescriptor.open(path + ".chunks", O_RDWR | O_CREAT)
            var hasher = XXH3.Hasher()
            var committed: UInt64 = 0
            var chunks = 0
            if resuming {
                (committed, chunks) = HostStore.verifiedPrefix(
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
            try logFD.truncate(Int64(chunks * HostStore.logRecordSize))
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
                return
            }
            current = HostStore.OpenPartial(
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
            settings.note("refused \(file) of \(clipID) from \(device): \(error)")
            try bulk.send(.fileComplete(clipID: clipID, file: file, verified: false, reason: reason))
            current = nil
        }
    }

    /// `clip_done`: the clip's files all verified on this channel are moved into place, once, and confirmed.
    func clipDone(_ clipID: String) throws(LinkError) {
        try HostStore.checkClipID(clipID)
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
                let stored = Set(try FileSystem.list(final)).subtracting(HostStore.hostFiles)
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
                var note = settings.clockNote()
                // What the clip really is, measured from its own file, beside what the device claimed.
                for (k, v) in settings.inspect("\(partial)/clip.mp4") { note[k] = v }
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
                store.onClipStored?(final)
            }
        } catch let e as LinkError {
            throw e
        } catch { throw LinkError(.io, "\(final): \(error)") }
        try bulk.send(.clipConfirmed(clipID: clipID, path: final))
    }
}
