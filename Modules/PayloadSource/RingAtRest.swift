import Checksum
import FragmentRing
import Glibc
import Syscall
import TimelineIndex

/// A ring directory read at rest — after its session ended, or beside one still writing it — without opening it: its
/// index is scanned (`FragmentRing.scan`), a window is selected as a ring in use selects one (`RingWindow.select`, the
/// current generation only), and each fragment is copied out (a hard link where it can be) and its length and XXH3
/// checked against the record, so a fragment the writer recycled meanwhile is named, never taken for another. Nothing
/// in the ring changes: no pin, no recovery. The timeline is not kept with a ring, so a window's is empty.
public struct RingAtRestPayloadSource: PayloadBacking {
    public struct Handle: Hashable, Sendable {
        public let sequence: SequenceNumber
        let file: String
        let byteLength: Int64
        let checksum: UInt64
    }

    public let directory: String
    public let scan: RingScan
    /// The current generation's fragments, oldest first: the stream a window is cut from.
    public let fragments: [FragmentInfo]

    public init(directory: String) throws(PayloadError) {
        self.directory = directory
        do { scan = try FragmentRing.scan(directory: directory, verifyChecksums: false) } catch {
            throw PayloadError(error)
        }
        fragments = scan.fragments.filter { [scan] in $0.generation == scan.generation }.sorted {
            $0.sequence < $1.sequence
        }
    }

    public func freeze(startNs: Int64, endNs: Int64) throws(PayloadError) -> SwingWindow<RingAtRestPayloadSource> {
        let w: RingWindow
        do { w = try RingWindow.select(from: fragments, startNs: startNs, endNs: endNs) } catch {
            throw PayloadError(error)
        }
        let chosen = w.fragments.map { f in
            SwingWindow<RingAtRestPayloadSource>.Fragment(
                info: f,
                handle: Handle(
                    sequence: f.sequence,
                    file: FragmentRing.fragmentPath(
                        directory: directory, f.sequence, fileExtension: scan.fileExtension),
                    byteLength: f.byteLength, checksum: f.checksum))
        }
        return SwingWindow(
            startNs: startNs, endNs: endNs, fragments: chosen,
            timeline: TimelineSnapshot(startNs: startNs, endNs: endNs, entries: [], sourceNames: [:]),
            gaps: w.gaps, backing: self, pin: nil)
    }

    public func bytes(of handle: Handle) throws(PayloadError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readSmallFile(
                handle.file, limit: Int(clamping: handle.byteLength) + 1, regularFileOnly: true)
        } catch {
            throw error.errno == ENOENT
                ? PayloadError(.rolledAway, "fragment \(handle.sequence) rolled away (\(handle.file))")
                : PayloadError(.io, "\(error)")
        }
        try check(bytes, handle)
        return bytes
    }

    /// Links or copies the fragment out, then checks the copy: what is checked is what stays, whatever the ring does next.
    public func extract(_ handle: Handle, to destination: String) throws(PayloadError) -> FileSystem.CloneMethod {
        let method: FileSystem.CloneMethod
        do { method = try FileSystem.cloneFile(handle.file, destination) } catch {
            throw error.errno == ENOENT
                ? PayloadError(.rolledAway, "fragment \(handle.sequence) rolled away (\(handle.file))")
                : PayloadError(.io, "extract \(handle.file): \(error)")
        }
        let copy: [UInt8]
        do {
            copy = try FileSystem.readSmallFile(
                destination, limit: Int(clamping: handle.byteLength) + 1, regularFileOnly: true)
        } catch {
            throw PayloadError(.io, "\(error)")
        }
        try check(copy, handle)
        return method
    }

    func check(_ bytes: [UInt8], _ handle: Handle) throws(PayloadError) {
        guard bytes.count == handle.byteLength, XXH3.hash(bytes) == handle.checksum else {
            throw PayloadError(
                .rolledAway,
                "fragment \(handle.sequence) (\(handle.file)): \(bytes.count) bytes that do not match its record (\(handle.byteLength) bytes, xxh3 \(XXH3.hex(handle.checksum))): recycled while read, or damaged (ppc-tool ring verify)"
            )
        }
    }

    public func release(_ window: SwingWindow<RingAtRestPayloadSource>) throws(PayloadError) {}
}
