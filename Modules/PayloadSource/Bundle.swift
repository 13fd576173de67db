import Checksum
import Foundation
import FragmentRing
import Glibc
import JSONInput
import Syscall
import TimelineIndex

/// A window written to disk:
///
/// ```
/// BUNDLE/bundle.json            format, window, every fragment (file, sequence, times, frames, keyframe, codec,
///                               bytes, xxh3) and the index file's xxh3
/// BUNDLE/fragments/<seq>.<ext>  the fragments, byte-identical to the ring's (hard links where possible)
/// BUNDLE/index.bin              the window's timeline snapshot (TimelineSnapshot.encoded)
/// ```
///
/// Written atomically: everything goes into a sibling temporary directory, is fsynced, and is renamed into place, so a
/// half-written bundle never appears under its final name.
public enum BundleWriter {
    public static let format = "ppc-swing-bundle"

    /// What writing a bundle did.
    public struct Report: Sendable {
        public let path: String
        public let fragments: Int
        public let bytes: Int64
        /// How each fragment got there (hard link, reflink, in-kernel copy).
        public let methods: [FileSystem.CloneMethod]
    }

    /// Writes `window` as a bundle at `path` (which must not exist).
    public static func write<B: PayloadBacking>(
        _ window: SwingWindow<B>, to path: String, fileExtension: String = "bin", sync: Bool = true
    ) throws(PayloadError) -> Report {
        guard !FileSystem.exists(path) else { throw PayloadError(.io, "\(path) already exists") }
        let parent = (path as NSString).deletingLastPathComponent
        let tmp = "\(parent.isEmpty ? "." : parent)/.\((path as NSString).lastPathComponent).partial-\(getpid())"
        do {
            try removeTree(tmp)
            try FileSystem.makeDirectory(tmp)
            try FileSystem.makeDirectory("\(tmp)/fragments")
            var entries: [[String: Any]] = []
            var methods: [FileSystem.CloneMethod] = []
            var total: Int64 = 0
            for f in window.fragments {
                let name = "fragments/\(f.info.sequence.hex).\(fileExtension)"
                methods.append(try window.backing.extract(f.handle, to: "\(tmp)/\(name)"))
                total += f.info.byteLength
                entries.append([
                    "file": name, "sequence": f.info.sequence.rawValue, "generation": f.info.generation,
                    "startNs": f.info.startNs, "endNs": f.info.endNs, "frameCount": f.info.frameCount,
                    "keyframe": f.info.startsWithKeyframe, "codec": f.info.codec.rawValue, "bytes": f.info.byteLength,
                    "xxh3": XXH3.hex(f.info.checksum),
                ])
            }
            let index = window.timeline.encoded()
            try writeFile("\(tmp)/index.bin", index, sync: sync)
            let meta: [String: Any] = [
                "format": format, "version": 1, "clock": "CLOCK_MONOTONIC", "startNs": window.startNs,
                "endNs": window.endNs, "fragments": entries,
                "index": [
                    "file": "index.bin", "entries": window.timeline.entries.count, "xxh3": XXH3.hex(XXH3.hash(index)),
                ],
                "gaps": window.gaps.map {
                    ["after": $0.after.rawValue, "before": $0.before.rawValue, "missingNs": $0.missingNs]
                },
            ]
            let json = try JSONSerialization.data(withJSONObject: meta, options: [.prettyPrinted, .sortedKeys])
            try writeFile("\(tmp)/bundle.json", Array(json), sync: sync)
            if sync {
                for f in entries { try FileDescriptor.open("\(tmp)/\(f["file"] as! String)", O_RDONLY).sync() }
                try FileSystem.syncDirectory("\(tmp)/fragments")
                try FileSystem.syncDirectory(tmp)
            }
            try FileSystem.rename(tmp, path)
            if sync { try FileSystem.syncDirectory(parent.isEmpty ? "." : parent) }
            return Report(path: path, fragments: entries.count, bytes: total, methods: methods)
        } catch let e as PayloadError {
            try? removeTree(tmp)
            throw e
        } catch {
            try? removeTree(tmp)
            throw PayloadError(.io, "write bundle \(path): \(error)")
        }
    }

    static func writeFile(_ path: String, _ bytes: [UInt8], sync: Bool) throws {
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        try bytes.withUnsafeBytes { try fd.writeAll($0) }
        if sync { try fd.sync() }
    }

    static func removeTree(_ path: String) throws {
        guard FileSystem.exists(path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }
}

/// A bundle read back: the same SwingWindow API as the live ring.
public struct BundlePayloadSource: PayloadBacking {
    /// Opaque outside this module: one fragment file of this bundle.
    public struct Handle: Hashable, Sendable {
        let file: String
        let checksum: UInt64
        let byteLength: Int64
    }

    public let path: String
    public let startNs: Int64
    public let endNs: Int64
    let fragments: [SwingWindow<BundlePayloadSource>.Fragment]
    let timeline: TimelineSnapshot
    let gaps: [RingWindow.Gap]

    /// Opens and checks a bundle: its bundle.json, each fragment file's presence and size, and index.bin's checksum.
    /// Every problem names the file and the field.
    public init(path: String) throws(PayloadError) {
        self.path = path
        let metaPath = "\(path)/bundle.json"
        let object: Any
        do {
            object = try JSONInput.value(
                Data(FileSystem.readSmallFile(metaPath, limit: 4 << 20, regularFileOnly: true)))
        } catch {
            throw PayloadError(.badBundle, "\(metaPath): cannot read (\(error))")
        }
        guard let meta = object as? [String: Any] else {
            throw PayloadError(.badBundle, "\(metaPath): not a JSON object")
        }
        func field<T>(_ o: [String: Any], _ key: String, _ context: String) throws(PayloadError) -> T {
            guard let v = o[key] as? T else {
                throw PayloadError(.badBundle, "\(metaPath): \(context)\(key) is missing or not a \(T.self)")
            }
            return v
        }
        guard meta["format"] as? String == BundleWriter.format else {
            throw PayloadError(.badBundle, "\(metaPath): format is not \"\(BundleWriter.format)\"")
        }
        let start: Int64 = try field(meta, "startNs", "")
        let end: Int64 = try field(meta, "endNs", "")
        let list: [[String: Any]] = try field(meta, "fragments", "")
        var fragments: [SwingWindow<BundlePayloadSource>.Fragment] = []
        for (i, f) in list.enumerated() {
            let at = "fragments[\(i)]."
            let file: String = try field(f, "file", at)
            let sum: String = try field(f, "xxh3", at)
            guard let checksum = UInt64(sum, radix: 16) else {
                throw PayloadError(.badBundle, "\(metaPath): \(at)xxh3 '\(sum)' is not hex")
            }
            let info = FragmentInfo(
                sequence: SequenceNumber(try field(f, "sequence", at) as UInt64),
                generation: try field(f, "generation", at),
                startNs: try field(f, "startNs", at), endNs: try field(f, "endNs", at),
                frameCount: try field(f, "frameCount", at), startsWithKeyframe: try field(f, "keyframe", at),
                codec: FragmentCodec(rawValue: try field(f, "codec", at)), byteLength: try field(f, "bytes", at),
                checksum: checksum)
            let full = "\(path)/\(file)"
            let size: Int64
            do { size = try FileDescriptor.open(full, O_RDONLY).size() } catch {
                throw PayloadError(.badBundle, "\(full): \(error)")
            }
            guard size == info.byteLength else {
                throw PayloadError(.badBundle, "\(full): \(size) bytes, bundle.json says \(info.byteLength)")
            }
            fragments.append(.init(info: info, handle: Handle(file: full, checksum: checksum, byteLength: size)))
        }
        let indexMeta: [String: Any] = try field(meta, "index", "")
        let indexFile: String = try field(indexMeta, "file", "index.")
        let indexBytes: [UInt8]
        do { indexBytes = Array(try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(indexFile)"))) } catch {
            throw PayloadError(.badBundle, "\(path)/\(indexFile): cannot read (\(error.localizedDescription))")
        }
        do { self.timeline = try TimelineSnapshot(decoding: indexBytes) } catch {
            throw PayloadError(.badBundle, "\(path)/\(indexFile): \(error)")
        }
        let gapList = meta["gaps"] as? [[String: Any]] ?? []
        self.gaps = gapList.compactMap { g in
            guard let a = g["after"] as? UInt64, let b = g["before"] as? UInt64, let m = g["missingNs"] as? Int64 else {
                return nil
            }
            return RingWindow.Gap(after: SequenceNumber(a), before: SequenceNumber(b), missingNs: m)
        }
        self.startNs = start
        self.endNs = end
        self.fragments = fragments
    }

    public func freeze(startNs: Int64, endNs: Int64) throws(PayloadError) -> SwingWindow<BundlePayloadSource> {
        guard startNs >= self.startNs, endNs <= self.endNs else {
            throw PayloadError(
                .notRetained, "\(path) holds [\(self.startNs), \(self.endNs)] ns; asked for [\(startNs), \(endNs)]")
        }
        guard let first = fragments.lastIndex(where: { $0.info.startNs <= startNs && $0.info.startsWithKeyframe })
        else {
            throw PayloadError(.notRetained, "\(path): no keyframe fragment at or before \(startNs) ns")
        }
        var chosen: [SwingWindow<BundlePayloadSource>.Fragment] = []
        for f in fragments[first...] {
            chosen.append(f)
            if f.info.endNs >= endNs { break }
        }
        let entries = timeline.entries.filter { $0.timeNs >= startNs && $0.timeNs <= endNs }
        let sequences = Set(chosen.map(\.info.sequence))
        return SwingWindow(
            startNs: startNs, endNs: endNs, fragments: chosen,
            timeline: TimelineSnapshot(
                startNs: startNs, endNs: endNs, entries: entries, sourceNames: timeline.sourceNames),
            gaps: gaps.filter { sequences.contains($0.after) && sequences.contains($0.before) }, backing: self, pin: nil
        )
    }

    /// The whole bundle as a window.
    public func window() -> SwingWindow<BundlePayloadSource> {
        SwingWindow(
            startNs: startNs, endNs: endNs, fragments: fragments, timeline: timeline, gaps: gaps, backing: self,
            pin: nil)
    }

    public func bytes(of handle: Handle) throws(PayloadError) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = Array(try Data(contentsOf: URL(fileURLWithPath: handle.file))) } catch {
            throw PayloadError(.io, "\(handle.file): \(error.localizedDescription)")
        }
        guard bytes.count == handle.byteLength, XXH3.hash(bytes) == handle.checksum else {
            throw PayloadError(.badBundle, "\(handle.file): bytes do not match bundle.json's length and xxh3")
        }
        return bytes
    }

    public func extract(_ handle: Handle, to destination: String) throws(PayloadError) -> FileSystem.CloneMethod {
        do { return try FileSystem.cloneFile(handle.file, destination) } catch {
            throw PayloadError(.io, "extract \(handle.file): \(error)")
        }
    }

    public func release(_ window: SwingWindow<BundlePayloadSource>) throws(PayloadError) {}
}
