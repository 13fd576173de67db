import Checksum
import Foundation
import Glibc
import JSONInput
import Syscall

/// What a directory holds, read without changing anything: the basis of both recovery on open and
/// `ppc-tool ring inspect/verify`.
public struct RingScan: Sendable {
    /// Whole, checksum-valid fragments of the current generation, ascending by sequence.
    public var fragments: [FragmentInfo]
    /// Pins recorded and not released.
    public var pins: [PinToken]
    public var generation: UInt32
    /// The highest sequence any record names (the sequence continues after it).
    public var highestSequence: SequenceNumber?
    /// The highest sequence that was published and has since been recycled.
    public var recycledThrough: SequenceNumber?
    /// Files that must not be trusted, with why: orphans (no durable record), short or checksum-bad fragments,
    /// fragments of an older generation. Opening the ring removes them.
    public var rejected: [(file: String, reason: String)]
    /// Which of `rejected` a crash leaves behind and opening the ring repairs: the fragment being written when the
    /// process stopped (numbered after every durable record, so it never counted).
    public var recoverableFiles: Set<String> = []
    /// Live fragments whose record is durable but whose file is gone: real loss, never the work of a crash.
    public var missing: [(sequence: SequenceNumber, file: String)] = []
    /// Non-zero bytes after the last whole, valid record of index.log (a torn append; zeros are preallocation).
    public var tornTailBytes: Int64
    /// Records in the middle of the log whose own checksum failed.
    public var damagedRecords: Int
    /// The ring's capacity and fragment file extension, as its ring.json records them.
    public var capacity = 0
    public var fileExtension = ""

    /// Real damage: what a crash cannot explain (a checksum or size that disagrees with its durable record, a live
    /// fragment gone, a damaged record in the middle of the log, a file that is no fragment).
    public var problems: [String] {
        rejected.filter { !recoverableFiles.contains($0.file) }.map { "\($0.file): \($0.reason)" }
            + missing.map {
                "\($0.file): missing: fragment \($0.sequence) is live by its durable record, but its file is gone"
            }
            + (damagedRecords > 0 ? ["index.log: \(damagedRecords) damaged records"] : [])
    }

    /// What a crash leaves and the next open of the ring repairs (it discards them): the fragment in flight, a torn
    /// append at the end of the log.
    public var recoverable: [String] {
        rejected.filter { recoverableFiles.contains($0.file) }.map { "\($0.file): \($0.reason)" }
            + (tornTailBytes > 0
                ? ["index.log: \(tornTailBytes) bytes of a torn record at the end (an append cut by a crash)"] : [])
    }
}

extension FragmentRing {
    static let metadataFile = "ring.json"
    static let indexFile = "index.log"
    static let fragmentsDirectory = "fragments"
    static let format = "ppc-fragment-ring"
    static let formatVersion = 1

    /// Reads a ring directory without changing it. `verifyChecksums` reads every fragment's bytes.
    public static func scan(directory: String, verifyChecksums: Bool = true) throws(RingError) -> RingScan {
        let metaPath = "\(directory)/\(metadataFile)"
        guard FileSystem.exists(metaPath) else {
            throw RingError(.badDirectory, "\(directory): not a fragment ring (no \(metadataFile))")
        }
        let (capacity, fileExtension) = try checkMetadata(metaPath)
        do {
            let log = try IndexLog(path: "\(directory)/\(indexFile)", sync: false)
            let (records, validLength, damaged, torn) = try log.readAll()
            var result = try scan(
                directory: directory, records: records, tornBytes: torn, validLength: validLength,
                damaged: damaged, verifyChecksums: verifyChecksums)
            result.capacity = capacity
            result.fileExtension = fileExtension
            // The newest `capacity` fragments, and every pinned one, must be there: recycling only ever removes the
            // oldest unpinned beyond capacity.
            let present = Set(result.fragments.map(\.sequence))
            let published = records.filter { $0.kind == .fragment }.map(\.fragmentInfo)
            let current = Set(published.filter { $0.generation == result.generation }.map(\.sequence))
            var live = Set(current.sorted().suffix(capacity))
            for pin in result.pins {
                live.formUnion(published.map(\.sequence).filter { !($0 < pin.first) && !(pin.last < $0) })
            }
            result.missing = live.subtracting(present).sorted().map {
                ($0, path(in: "\(directory)/\(fragmentsDirectory)", $0, fileExtension))
            }
            return result
        } catch let e as SystemError {
            throw RingError(.io, "\(directory): \(e)", cause: e)
        } catch let e as RingError {
            throw e
        } catch {
            throw RingError(.io, "\(directory): \(error)")
        }
    }

    /// Checks ring.json; returns the capacity and file extension it records, each refused when out of bounds.
    @discardableResult
    static func checkMetadata(_ path: String) throws(RingError) -> (capacity: Int, fileExtension: String) {
        let object: Any
        do {
            object = try JSONInput.value(Data(FileSystem.readSmallFile(path, limit: 1 << 20, regularFileOnly: true)))
        } catch let e as SystemError {
            throw RingError(.badDirectory, "\(path): not readable (\(e))")
        } catch {
            throw RingError(.badDirectory, "\(path): not readable JSON (\(error))")
        }
        guard let o = object as? [String: Any], o["format"] as? String == format else {
            throw RingError(.badDirectory, "\(path): 'format' is not \"\(format)\"")
        }
        guard let v = o["version"] as? Int, v == formatVersion else {
            throw RingError(.badDirectory, "\(path): 'version' \(o["version"] ?? "missing") is not \(formatVersion)")
        }
        guard let capacity = (o["capacity"] as? NSNumber).flatMap({ Int(exactly: $0.doubleValue) }),
            (1...maxCapacity).contains(capacity)
        else {
            throw RingError(
                .badDirectory,
                "\(path): 'capacity' \(o["capacity"] ?? "missing") is not a whole number from 1 to \(maxCapacity)")
        }
        let ext = o["fileExtension"] as? String ?? "bin"
        if let why = PlainName.problem(ext, what: "'fileExtension'", maxLength: 16) {
            throw RingError(.badDirectory, "\(path): \(why)")
        }
        return (capacity, ext)
    }

    /// Where a ring directory keeps a fragment's file (which its writer may recycle at any moment).
    public static func fragmentPath(directory: String, _ sequence: SequenceNumber, fileExtension: String) -> String {
        path(in: "\(directory)/\(fragmentsDirectory)", sequence, fileExtension)
    }

    /// The most fragments a ring may hold.
    public static let maxCapacity = 100_000

    static func scan(
        directory: String, records: [IndexRecord], tornBytes: Int64, validLength: Int64, damaged: Int,
        verifyChecksums: Bool
    ) throws -> RingScan {
        var generation: UInt32 = 0
        var byNumber: [SequenceNumber: FragmentInfo] = [:]
        var pins: [UInt64: PinToken] = [:]
        var highest: SequenceNumber?
        for r in records {
            switch r.kind {
            case .generation: generation = max(generation, r.generation)
            case .fragment:
                let f = r.fragmentInfo
                byNumber[f.sequence] = f
                if highest == nil || highest! < f.sequence { highest = f.sequence }
            case .pin:
                pins[UInt64(bitPattern: r.a)] = PinToken(
                    id: UInt64(bitPattern: r.a), first: SequenceNumber(r.sequence),
                    last: SequenceNumber(UInt64(bitPattern: r.b)))
            case .unpin:
                pins[UInt64(bitPattern: r.a)] = nil
            }
        }
        var live: [FragmentInfo] = []
        var rejected: [(String, String)] = []
        var recoverable: Set<String> = []
        var present: Set<SequenceNumber> = []
        let dir = "\(directory)/\(fragmentsDirectory)"
        let names = FileSystem.exists(dir) ? try FileSystem.list(dir).sorted() : []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for name in names {
            let path = "\(dir)/\(name)"
            guard let dot = name.firstIndex(of: "."), let raw = UInt64(name[..<dot], radix: 16) else {
                rejected.append((path, "not a fragment file name"))
                continue
            }
            let seq = SequenceNumber(raw)
            guard let info = byNumber[seq] else {
                if highest.map({ $0 < seq }) ?? true {
                    rejected.append(
                        (path, "orphan: no durable index record (the fragment being written when the process stopped)"))
                    recoverable.insert(path)
                } else {
                    rejected.append((path, "orphan: no durable index record, and numbered before the newest record"))
                }
                continue
            }
            // An older generation's fragment stays only while a pin holds it (a clip still owed to a host).
            let pinned = pins.values.contains { !(seq < $0.first) && !($0.last < seq) }
            guard info.generation == generation || pinned else {
                rejected.append((path, "from generation \(info.generation), the ring is at \(generation)"))
                continue
            }
            let fd = try FileDescriptor.open(path, O_RDONLY)
            let size = try fd.size()
            guard size == info.byteLength else {
                rejected.append((path, "\(size) bytes, its record says \(info.byteLength)"))
                continue
            }
            if verifyChecksums {
                let hasher = XXH3.Hasher()
                var offset: Int64 = 0
                while offset < size {
                    let n = try buffer.withUnsafeMutableBytes { try fd.read(into: $0, at: offset) }
                    if n == 0 { break }
                    buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                    offset += Int64(n)
                }
                guard hasher.digest == info.checksum else {
                    rejected.append(
                        (
                            path,
                            "checksum \(XXH3.hex(hasher.digest)) does not match its record's \(XXH3.hex(info.checksum))"
                        ))
                    continue
                }
            }
            present.insert(seq)
            live.append(info)
        }
        live.sort { $0.sequence < $1.sequence }
        // A published fragment whose file is gone was recycled.
        var recycledThrough: SequenceNumber?
        for (seq, info) in byNumber where !present.contains(seq) && info.generation == generation {
            if recycledThrough == nil || recycledThrough! < seq { recycledThrough = seq }
        }
        return RingScan(
            fragments: live, pins: pins.values.sorted { $0.id < $1.id }, generation: generation,
            highestSequence: highest,
            recycledThrough: recycledThrough, rejected: rejected, recoverableFiles: recoverable,
            tornTailBytes: tornBytes,
            damagedRecords: damaged)
    }
}
