import Checksum
import Foundation
import Glibc
import Synchronization
import Syscall

/// A disk-backed ring of encoded fragments: the last `capacity` fragments, each a file, committed by a durable record
/// in `index.log`.
///
/// ```
/// DIR/ring.json                   format, version, capacity, clock
/// DIR/index.log                   64-byte records: fragment, pin, unpin, generation (see IndexRecord)
/// DIR/fragments/<seq:16 hex>.<ext>  one fragment's bytes, exactly as the encoder wrote them
/// ```
///
/// Writing one fragment (durability `.fsync`):
/// 1. `reserve()` takes the next sequence number and creates `fragments/<seq>.<ext>`; the writer appends bytes,
///    hashed as they pass (XXH3-64).
/// 2. `publish` fdatasyncs the fragment, then appends its record to `index.log` and fdatasyncs that. The record is the
///    commit point: only then is the fragment visible, and only then does `latestSequence` move.
/// 3. The oldest unpinned fragments beyond `capacity` are recycled (their files unlinked).
///
/// After a crash at any instant, opening the ring keeps only fragments with a whole, valid record whose file has the
/// recorded length and checksum; anything else is removed and reported, and the sequence continues after the highest
/// recorded one, so it never goes back.
///
/// Thread-safety: one writer (reserve/publish) and any number of readers (window, open, read, extract, pin). State is
/// behind a mutex held only for in-memory bookkeeping; log appends have their own lock; file I/O happens outside both.
public final class FragmentRing: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Fragments retained (seed 000: 20).
        public var capacity: Int
        public var durability: Durability
        public var whenOnlyPinnedRemain: FullPolicy
        /// File extension of fragment files (`ts`, `m4s`, `zst`, `bin`).
        public var fileExtension: String
        /// First sequence number of a new ring (a test may start near the wrap).
        public var initialSequence: UInt64
        /// Read every fragment back on open to check its checksum.
        public var verifyOnOpen: Bool
        /// Disk space held in reserve (`DIR/headroom`) so capture goes on when another writer fills the disk: a write
        /// that finds the disk full takes room from it and is tried again; recycling tops it back up. 0: none.
        public var headroomBytes: Int64

        public init(
            capacity: Int, durability: Durability = .fsync, whenOnlyPinnedRemain: FullPolicy = .refuse,
            fileExtension: String = "bin", initialSequence: UInt64 = 1, verifyOnOpen: Bool = true,
            headroomBytes: Int64 = 0
        ) {
            self.headroomBytes = headroomBytes
            precondition(capacity > 0, "a ring holds at least one fragment")
            self.capacity = capacity
            self.durability = durability
            self.whenOnlyPinnedRemain = whenOnlyPinnedRemain
            self.fileExtension = fileExtension
            self.initialSequence = initialSequence
            self.verifyOnOpen = verifyOnOpen
        }
    }

    public enum Durability: String, Sendable {
        /// Fragment data and its index record are fdatasynced before the fragment is visible.
        case fsync
        /// Nothing is synced: survives a process crash (the page cache outlives it), not a power cut.
        case none
    }

    /// How pinned fragments share the ring, and what to do with a new fragment when every older one is pinned.
    public enum FullPolicy: Sendable, Equatable {
        /// Pins count against capacity, so each one shortens the live window; when every older fragment is pinned the
        /// new one is refused (seed 000: refuse rather than evict anything unconfirmed).
        case refuse
        /// As `.refuse`, but up to this many fragments are kept beyond capacity while pins hold first.
        case overflow(Int)
        /// Pins do not count against capacity: the newest `capacity` fragments are always kept, and a pinned fragment
        /// older than them stays beside them until it is unpinned. The live window never shrinks for a clip still
        /// owed, and nothing is refused; the disk holds the owed clips' fragments on top of the ring (whoever pins
        /// bounds them). What a capture session uses.
        case keepPinnedBeside
    }

    struct State {
        var live: [FragmentInfo] = []
        var nextSequence: SequenceNumber
        var generation: UInt32
        var recycledThrough: SequenceNumber?
        var pins: [UInt64: PinToken] = [:]
        var pinCounts: [SequenceNumber: Int] = [:]
        var nextPinId: UInt64 = 1
        var published: UInt64 = 0
        var refused: UInt64 = 0
        var noops: UInt64 = 0
        /// Writes that found the disk full, and the oldest fragments given up early to make room when the headroom was
        /// spent (the ring then holds less than its capacity until recycling catches up).
        var diskFullEvents: UInt64 = 0
        var givenUpForSpace: UInt64 = 0
    }

    public let directory: String
    public let configuration: Configuration
    /// What opening found and did (fragments kept, files removed and why).
    public let recovery: RingScan
    private let state: Guarded<State>
    private let log: Guarded<IndexLog>
    private let headroom: Headroom
    private let latestRaw = Atomic<UInt64>(0)
    private let hasLatest = Atomic<Bool>(false)

    var fragmentsPath: String { "\(directory)/\(Self.fragmentsDirectory)" }

    /// Opens the ring in `directory`, creating it if absent, recovering it if a process stopped while writing.
    public init(directory: String, configuration: Configuration) throws(RingError) {
        self.directory = directory
        self.configuration = configuration
        let sync = configuration.durability == .fsync
        do {
            try FileSystem.makeDirectory(directory)
            try FileSystem.makeDirectory("\(directory)/\(Self.fragmentsDirectory)")
            let metaPath = "\(directory)/\(Self.metadataFile)"
            if FileSystem.exists(metaPath) { try Self.checkMetadata(metaPath) }
            try Self.writeMetadata(directory: directory, configuration: configuration, sync: sync)

            let log = try IndexLog(path: "\(directory)/\(Self.indexFile)", sync: sync)
            let (records, validLength, damaged, torn) = try log.readAll()
            var scan = try Self.scan(
                directory: directory, records: records, tornBytes: torn, validLength: validLength, damaged: damaged,
                verifyChecksums: configuration.verifyOnOpen)
            for (file, _) in scan.rejected { try FileSystem.removeIfPresent(file) }

            var s = State(
                nextSequence: scan.highestSequence?.advanced(by: 1) ?? SequenceNumber(configuration.initialSequence),
                generation: scan.generation)
            s.live = scan.fragments
            s.recycledThrough = scan.recycledThrough
            for p in scan.pins {
                s.pins[p.id] = p
                s.nextPinId = max(s.nextPinId, p.id + 1)
                for f in s.live where !(f.sequence < p.first) && !(p.last < f.sequence) {
                    s.pinCounts[f.sequence, default: 0] += 1
                }
            }
            // Enforce capacity (a crash between commit and recycle can leave one too many).
            let victims = Self.chooseVictims(
                &s, capacity: configuration.capacity, policy: configuration.whenOnlyPinnedRemain)
            for v in victims {
                try FileSystem.removeIfPresent(
                    Self.path(in: "\(directory)/\(Self.fragmentsDirectory)", v, configuration.fileExtension))
            }
            scan.fragments = s.live
            // Compact: the log restarts with exactly what is live.
            var compact = [IndexRecord(kind: .generation, generation: s.generation)]
            // Keep the highest sequence ever recorded, so the sequence never goes back even if all were recycled.
            if let highest = scan.highestSequence, s.live.last?.sequence != highest,
                let retired = records.last(where: { $0.kind == .fragment && SequenceNumber($0.sequence) == highest })
            {
                compact.append(retired)
            }
            compact += s.live.map(IndexRecord.fragment)
            compact += s.pins.values.sorted { $0.id < $1.id }.map {
                IndexRecord(
                    kind: .pin, sequence: $0.first.rawValue, a: Int64(bitPattern: $0.id),
                    b: Int64(bitPattern: $0.last.rawValue))
            }
            try log.rewrite(compact, directory: directory)

            if let last = s.live.last {
                latestRaw.store(last.sequence.rawValue, ordering: .releasing)
                hasLatest.store(true, ordering: .releasing)
            }
            self.recovery = scan
            self.state = Guarded(s)
            self.log = Guarded(log)
            self.headroom = Headroom(directory: directory, target: configuration.headroomBytes)
        } catch let e as RingError {
            throw e
        } catch let e as SystemError {
            throw RingError(.io, "\(directory): \(e)", cause: e)
        } catch {
            throw RingError(.io, "\(directory): \(error)")
        }
    }

    static func writeMetadata(directory: String, configuration: Configuration, sync: Bool) throws {
        let meta: [String: Any] = [
            "format": format, "version": formatVersion, "capacity": configuration.capacity,
            "fileExtension": configuration.fileExtension, "clock": "CLOCK_MONOTONIC",
            "durability": configuration.durability.rawValue,
        ]
        let data = try JSONSerialization.data(withJSONObject: meta, options: [.prettyPrinted, .sortedKeys])
        let path = "\(directory)/\(metadataFile)"
        if let existing = try? Data(contentsOf: URL(fileURLWithPath: path)), existing == data { return }
        let tmp = path + ".tmp"
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
        try data.withUnsafeBytes { try fd.writeAll($0) }
        if sync { try fd.sync() }
        try FileSystem.rename(tmp, path)
        if sync { try FileSystem.syncDirectory(directory) }
    }

    static func path(in dir: String, _ seq: SequenceNumber, _ ext: String) -> String { "\(dir)/\(seq.hex).\(ext)" }

    /// The file of a fragment (which may be recycled at any moment; use ``open(_:)`` to read it safely).
    public func path(of sequence: SequenceNumber) -> String {
        Self.path(in: fragmentsPath, sequence, configuration.fileExtension)
    }

    // MARK: Writer

    /// Takes the next sequence number and creates its file. Only the writer calls this.
    public func reserve() throws(RingError) -> FragmentReservation {
        let (seq, generation) = state.withLock { s in
            let seq = s.nextSequence
            s.nextSequence = seq.advanced(by: 1)
            return (seq, s.generation)
        }
        let path = path(of: seq)
        do {
            let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC)
            return FragmentReservation(
                sequence: seq, generation: generation, path: path, fd: fd, makeRoom: { [self] in makeRoom($0) })
        } catch {
            throw RingError(.io, "reserve fragment \(seq): \(error)", cause: error)
        }
    }

    /// Makes a reserved fragment visible (see the type's documentation for the order of operations).
    ///
    /// A no-op when the reservation's slot rolled away or the ring was reset while the writer held it; refused when
    /// only pinned fragments remain and the policy says so. In both cases the reserved file is removed.
    public func publish(_ reservation: consuming FragmentReservation, _ timing: FragmentTiming) throws(RingError)
        -> PublishOutcome
    {
        let seq = reservation.sequence
        let path = reservation.path
        let info = FragmentInfo(
            sequence: seq, generation: reservation.generation, startNs: timing.startNs, endNs: timing.endNs,
            frameCount: timing.frameCount, startsWithKeyframe: timing.startsWithKeyframe, codec: timing.codec,
            byteLength: reservation.byteLength, checksum: reservation.hasher.digest)
        do {
            if configuration.durability == .fsync { try reservation.fd.syncData() }
        } catch {
            try? FileSystem.removeIfPresent(path)
            throw RingError(.io, "sync fragment \(seq): \(error)", cause: error)
        }
        _ = consume reservation  // closes the file

        enum Decision {
            case stale(String)
            case refuse(String)
            case commit
        }
        let decision: Decision = state.withLock { s in
            if info.generation != s.generation {
                return .stale(
                    "fragment \(seq) was reserved in generation \(info.generation); the ring was reset to \(s.generation)"
                )
            }
            if let r = s.recycledThrough, !(r < seq) {
                return .stale("fragment \(seq)'s slot rolled away (fragments through \(r) were already recycled)")
            }
            if configuration.whenOnlyPinnedRemain == .keepPinnedBeside { return .commit }
            let limit =
                configuration.capacity
                + {
                    if case .overflow(let extra) = configuration.whenOnlyPinnedRemain { return extra }
                    return 0
                }()
            let unpinned = s.live.filter { (s.pinCounts[$0.sequence] ?? 0) == 0 }.count
            if s.live.count + 1 > configuration.capacity && unpinned == 0 && s.live.count + 1 > limit {
                return .refuse(
                    "ring full: all \(s.live.count) retained fragments are pinned until their clips are confirmed; fragment \(seq) refused rather than evict an unconfirmed one"
                )
            }
            return .commit
        }
        switch decision {
        case .stale(let reason):
            try? FileSystem.removeIfPresent(path)
            state.withLock { $0.noops += 1 }
            return .noop(reason: reason)
        case .refuse(let reason):
            try? FileSystem.removeIfPresent(path)
            state.withLock { $0.refused += 1 }
            return .refused(reason: reason)
        case .commit:
            break
        }

        do {
            while true {
                do {
                    try log.withLock { log in try log.append(.fragment(info)) }
                    break
                } catch let e as SystemError where e.errno == ENOSPC {
                    guard makeRoom(Int64(IndexLog.preallocation)) else { throw e }
                }
            }
        } catch {
            try? FileSystem.removeIfPresent(path)
            throw RingError(.io, "commit fragment \(seq) to index.log: \(error)", cause: error)
        }

        let victims: [SequenceNumber] = state.withLock { s in
            let at = s.live.firstIndex { seq < $0.sequence } ?? s.live.endIndex
            s.live.insert(info, at: at)
            s.published += 1
            return Self.chooseVictims(&s, capacity: configuration.capacity, policy: configuration.whenOnlyPinnedRemain)
        }
        // The latest sequence only moves forward, even if an older reservation is published late.
        let raw = seq.rawValue
        if !hasLatest.load(ordering: .acquiring) || SequenceNumber(latestRaw.load(ordering: .relaxed)) < seq {
            latestRaw.store(raw, ordering: .releasing)
            hasLatest.store(true, ordering: .releasing)
        }
        for v in victims { try? FileSystem.removeIfPresent(self.path(of: v)) }
        // What recycling freed goes back into the headroom first (a no-op while it is whole).
        if !victims.isEmpty { headroom.refill() }
        return .published(info, recycled: victims)
    }

    /// The disk is full while the writer needs `bytes` more: room comes from the headroom, or, once that is spent, from
    /// the oldest unpinned fragment, given up early (never the newest, never a pinned one). Capture goes on with a
    /// shorter ring rather than stop; both are counted. False when there is nothing left to give.
    func makeRoom(_ bytes: Int64) -> Bool {
        state.withLock { $0.diskFullEvents += 1 }
        if headroom.release(atLeast: bytes) > 0 { return true }
        // Recycling as usual, one fragment sooner: the same choice (oldest unpinned, never the newest).
        let victim: SequenceNumber? = state.withLock { s in
            let v = Self.chooseVictims(&s, capacity: s.live.count - 1, policy: .refuse).first
            if v != nil { s.givenUpForSpace += 1 }
            return v
        }
        guard let victim else { return false }
        try? FileSystem.removeIfPresent(path(of: victim))
        return true
    }

    /// Gives the whole headroom back to the filesystem (capture is over: what it kept room for is done).
    public func releaseHeadroom() { _ = headroom.release(atLeast: .max, counted: false) }

    /// Disk-full figures: writes that found the disk full, bytes of headroom given back, fragments given up early for
    /// room, and the headroom held now.
    public var diskFull:
        (events: UInt64, headroomReleasedBytes: Int64, fragmentsGivenUp: UInt64, headroomHeldBytes: Int64)
    {
        let h = headroom.figures
        return state.withLock { ($0.diskFullEvents, h.released, $0.givenUpForSpace, h.held) }
    }

    /// Removes from `live` the oldest unpinned fragments beyond capacity; returns them. The newest fragment is never
    /// a victim: when every older one is pinned, the ring holds more than `capacity` (the publish decided that was
    /// allowed) rather than recycle what it just committed. Under `.keepPinnedBeside` the newest `capacity` are never
    /// victims: only an unpinned fragment older than all of them is.
    static func chooseVictims(_ s: inout State, capacity: Int, policy: FullPolicy) -> [SequenceNumber] {
        var victims: [SequenceNumber] = []
        func recycle(at i: Int) {
            let v = s.live.remove(at: i).sequence
            victims.append(v)
            if s.recycledThrough == nil || s.recycledThrough! < v { s.recycledThrough = v }
        }
        if policy == .keepPinnedBeside {
            // The oldest `live.count - capacity` are outside the window: of those, the unpinned go.
            var i = 0
            for _ in 0..<max(0, s.live.count - capacity) {
                if (s.pinCounts[s.live[i].sequence] ?? 0) == 0 { recycle(at: i) } else { i += 1 }
            }
            return victims
        }
        while s.live.count > capacity {
            guard let i = s.live.dropLast().firstIndex(where: { (s.pinCounts[$0.sequence] ?? 0) == 0 }) else { break }
            recycle(at: i)
        }
        return victims
    }

    /// Discards every unpinned fragment and starts a new generation: outstanding reservations become no-ops. Used when
    /// the stream is interrupted and its continuity cannot be claimed.
    public func reset() throws(RingError) {
        let (generation, victims): (UInt32, [SequenceNumber]) = state.withLock { s in
            s.generation &+= 1
            var victims: [SequenceNumber] = []
            s.live.removeAll { f in
                if (s.pinCounts[f.sequence] ?? 0) == 0 {
                    victims.append(f.sequence)
                    return true
                }
                return false
            }
            for v in victims where s.recycledThrough == nil || s.recycledThrough! < v { s.recycledThrough = v }
            return (s.generation, victims)
        }
        do {
            try log.withLock { log in try log.append(IndexRecord(kind: .generation, generation: generation)) }
        } catch {
            throw RingError(.io, "reset: \(error)", cause: error)
        }
        for v in victims { try? FileSystem.removeIfPresent(path(of: v)) }
    }

    // MARK: Readers

    /// The newest published sequence number; never decreases while the ring is open, nor across reopen.
    public var latestSequence: SequenceNumber? {
        hasLatest.load(ordering: .acquiring) ? SequenceNumber(latestRaw.load(ordering: .acquiring)) : nil
    }

    /// The retained fragments, ascending by sequence.
    public var fragments: [FragmentInfo] { state.withLock { $0.live } }

    /// Counts since open: published, refused (full of pinned), no-op publishes.
    public var counters: (published: UInt64, refused: UInt64, noops: UInt64) {
        state.withLock { ($0.published, $0.refused, $0.noops) }
    }

    /// How many pins hold each retained fragment.
    public var pinCounts: [SequenceNumber: Int] { state.withLock { $0.pinCounts } }

    /// The ordered fragments covering [startNs, endNs] on the capture clock, the first starting on a keyframe at or
    /// before `startNs`. Throws `notRetained` when the ring no longer holds the start, `notYetWritten` when it does not
    /// yet hold the end.
    ///
    /// Only the current generation counts: a fragment an older generation left (kept by a pin for a clip still owed)
    /// is another stream on another clock's span, never part of a new window.
    public func window(startNs: Int64, endNs: Int64) throws(RingError) -> RingWindow {
        try RingWindow.select(
            from: state.withLock { s in s.live.filter { $0.generation == s.generation } }, startNs: startNs,
            endNs: endNs)
    }

    /// Opens a retained fragment for reading. Fails cleanly with `rolledAway` if it is gone — never another
    /// fragment's bytes: files are named by sequence and never reused.
    public func open(_ handle: FragmentHandle) throws(RingError) -> OpenFragment {
        let info = state.withLock { s in
            s.live.first { $0.sequence == handle.sequence && $0.generation == handle.generation }
        }
        guard let info else {
            throw RingError(.rolledAway, "fragment \(handle.sequence) (generation \(handle.generation)) rolled away")
        }
        do {
            return OpenFragment(descriptor: try FileDescriptor.open(path(of: handle.sequence), O_RDONLY), info: info)
        } catch  where error.errno == ENOENT {
            throw RingError(.rolledAway, "fragment \(handle.sequence) rolled away while being opened")
        } catch {
            throw RingError(.io, "open fragment \(handle.sequence): \(error)", cause: error)
        }
    }

    /// The bytes of a retained fragment, checked against its checksum.
    public func read(_ handle: FragmentHandle) throws(RingError) -> [UInt8] {
        let opened = try open(handle)
        let info = opened.info
        var bytes = [UInt8](repeating: 0, count: Int(info.byteLength))
        do {
            let n = try bytes.withUnsafeMutableBytes { b in try opened.descriptor.read(into: b, at: 0) }
            guard n == bytes.count else {
                throw RingError(.corrupt, "fragment \(info.sequence): \(n) bytes on disk, \(info.byteLength) recorded")
            }
        } catch let e as SystemError {
            throw RingError(.io, "read fragment \(info.sequence): \(e)", cause: e)
        } catch let e as RingError {
            throw e
        } catch {
            throw RingError(.io, "\(error)")
        }
        guard XXH3.hash(bytes) == info.checksum else {
            throw RingError(.corrupt, "fragment \(info.sequence): checksum does not match its record")
        }
        return bytes
    }

    /// Copies a retained fragment to `destination` without passing its bytes through user space (hard link, reflink
    /// or an in-kernel copy). The copy outlives the fragment's recycling.
    public func extract(_ handle: FragmentHandle, to destination: String) throws(RingError) -> FileSystem.CloneMethod {
        let info = try open(handle).info
        do {
            return try FileSystem.cloneFile(path(of: info.sequence), destination)
        } catch  where error.errno == ENOENT {
            throw RingError(.rolledAway, "fragment \(handle.sequence) rolled away while being extracted")
        } catch {
            throw RingError(.io, "extract fragment \(handle.sequence): \(error)", cause: error)
        }
    }

    // MARK: Pins

    /// Pins the retained fragments `first…last` so they are not recycled until ``unpin(_:)``. Durable: the pin survives
    /// a restart. Throws `rolledAway` if any of them is already gone.
    public func pin(from first: SequenceNumber, through last: SequenceNumber) throws(RingError) -> PinToken {
        let token: PinToken? = state.withLock { s in
            let covered = s.live.filter { !($0.sequence < first) && !(last < $0.sequence) }
            guard first.distance(to: last) >= 0, covered.count == Int(first.distance(to: last)) + 1 else { return nil }
            let token = PinToken(id: s.nextPinId, first: first, last: last)
            s.nextPinId += 1
            s.pins[token.id] = token
            for f in covered { s.pinCounts[f.sequence, default: 0] += 1 }
            return token
        }
        guard let token else {
            throw RingError(.rolledAway, "cannot pin \(first)…\(last): not all of them are retained")
        }
        do {
            try log.withLock { log in
                try log.append(
                    IndexRecord(
                        kind: .pin, sequence: first.rawValue, a: Int64(bitPattern: token.id),
                        b: Int64(bitPattern: last.rawValue)))
            }
        } catch {
            release(token)
            throw RingError(.io, "pin: \(error)", cause: error)
        }
        return token
    }

    /// Releases a pin (the sink confirmed the clip). The fragments become recyclable again. A token read back from
    /// elsewhere (a pin record on disk) must name the pin exactly — id and range — or nothing is released.
    public func unpin(_ token: PinToken) throws(RingError) {
        guard state.withLock({ $0.pins[token.id] == token }) else {
            throw RingError(.unknownPin, "\(token) is not held")
        }
        do {
            try log.withLock { log in
                try log.append(IndexRecord(kind: .unpin, a: Int64(bitPattern: token.id)))
            }
        } catch {
            throw RingError(.io, "unpin: \(error)", cause: error)
        }
        release(token)
    }

    private func release(_ token: PinToken) {
        state.withLock { s in
            guard s.pins.removeValue(forKey: token.id) != nil else { return }
            for f in s.live where !(f.sequence < token.first) && !(token.last < f.sequence) {
                s.pinCounts[f.sequence, default: 1] -= 1
                if s.pinCounts[f.sequence] == 0 { s.pinCounts[f.sequence] = nil }
            }
        }
    }

    /// Pins currently held.
    public var pins: [PinToken] { state.withLock { $0.pins.values.sorted { $0.id < $1.id } } }
}

/// A retained fragment opened for reading: its descriptor keeps the bytes readable even if the ring recycles it now.
public struct OpenFragment: ~Copyable {
    public let descriptor: FileDescriptor
    public let info: FragmentInfo
}

/// A reserved fragment being written. Consumed by ``FragmentRing/publish(_:_:)``.
public struct FragmentReservation: ~Copyable {
    public let sequence: SequenceNumber
    public let generation: UInt32
    /// The file being written (not visible to readers until published).
    public let path: String
    let fd: FileDescriptor
    let hasher = XXH3.Hasher()
    public private(set) var byteLength: Int64 = 0
    /// Asks the ring for `bytes` of disk when a write finds the disk full; false when it has none to give.
    let makeRoom: @Sendable (Int64) -> Bool

    init(
        sequence: SequenceNumber, generation: UInt32, path: String, fd: consuming FileDescriptor,
        makeRoom: @escaping @Sendable (Int64) -> Bool = { _ in false }
    ) {
        self.sequence = sequence
        self.generation = generation
        self.path = path
        self.fd = fd
        self.makeRoom = makeRoom
    }

    /// Appends bytes to the fragment, hashing them as they pass. A full disk is given room by the ring (its headroom,
    /// then its oldest unpinned fragment) and the write tried again.
    public mutating func write(_ bytes: UnsafeRawBufferPointer) throws(RingError) {
        while true {
            do {
                try fd.writeAll(bytes, at: byteLength)
                break
            } catch  where error.errno == ENOSPC && makeRoom(Int64(bytes.count)) {
                continue
            } catch {
                throw RingError(.io, "write fragment \(sequence): \(error)", cause: error)
            }
        }
        hasher.update(bytes)
        byteLength += Int64(bytes.count)
    }
}

/// The fragments covering a time window, with any gaps in sequence or time between them named.
public struct RingWindow: Sendable, Equatable {
    public struct Gap: Sendable, Equatable {
        public let after: SequenceNumber
        public let before: SequenceNumber
        public let missingNs: Int64

        public init(after: SequenceNumber, before: SequenceNumber, missingNs: Int64) {
            self.after = after
            self.before = before
            self.missingNs = missingNs
        }
    }

    public let startNs: Int64
    public let endNs: Int64
    public let fragments: [FragmentInfo]
    /// Discontinuities inside the window (a refused or dropped fragment): reported, never hidden.
    public let gaps: [Gap]

    /// The window [startNs, endNs] over `live`, one generation's fragments in sequence order: the first starts on a
    /// keyframe at or before `startNs`; `notRetained` when none does, `notYetWritten` when they do not reach `endNs`.
    /// The one selection both a ring in use (`FragmentRing.window`) and a ring read at rest take.
    public static func select(from live: [FragmentInfo], startNs: Int64, endNs: Int64) throws(RingError) -> RingWindow {
        guard let newest = live.last else { throw RingError(.notYetWritten, "the ring is empty") }
        guard newest.endNs >= endNs else {
            throw RingError(.notYetWritten, "the ring holds up to \(newest.endNs) ns; the window ends at \(endNs) ns")
        }
        guard let first = live.lastIndex(where: { $0.startNs <= startNs && $0.startsWithKeyframe }) else {
            throw RingError(
                .notRetained,
                "the window starts at \(startNs) ns; the oldest retained keyframe fragment starts at \(live.first { $0.startsWithKeyframe }?.startNs ?? newest.startNs) ns"
            )
        }
        var out: [FragmentInfo] = []
        var gaps: [Gap] = []
        for f in live[first...] {
            if let prev = out.last, f.startNs != prev.endNs || prev.sequence.advanced(by: 1) != f.sequence {
                // The start itself fell in the gap: what the ring holds before it is a fragment kept beside the window
                // (pinned for another clip), not this window's pre-roll.
                if prev.endNs <= startNs && f.startNs > startNs {
                    throw RingError(
                        .notRetained,
                        "the window starts at \(startNs) ns; the ring holds up to \(prev.endNs) ns there, then from \(f.startNs) ns"
                    )
                }
                gaps.append(.init(after: prev.sequence, before: f.sequence, missingNs: f.startNs - prev.endNs))
            }
            out.append(f)
            if f.endNs >= endNs { break }
        }
        return RingWindow(startNs: startNs, endNs: endNs, fragments: out, gaps: gaps)
    }
}
