import Catalogue
import Foundation
import JSONInput
import PayloadSource
import Syscall

/// Why a clip folder of the library cannot be catalogued: the file and the field.
public struct LibraryError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A clip folder of the host's library (`LIBRARY/<device>/<clipId>/`) as the catalogue's entry: the library is the
/// truth, the catalogue its index, rebuilt from the folders at will.
///
/// What a folder says of itself: meta.json (what the device minted), host-meta.json (what the host measured, its clock
/// relation, when it arrived on which boot, the device's bay), swing.json (the swing the host placed it in and its place
/// in the order of receipt), annotations.json (what a person said of it).
public enum LibraryClip {
    /// What the host wrote of a clip it stored (host-meta.json), as far as an entry needs it.
    struct HostNotes: Decodable {
        struct Relation: Decodable {
            var offsetNs: Int64
            var uncertaintyNs: Int64?
        }
        /// Absent, or "none reported" (a string), when the device reported no clock relation.
        var clockRelation: Relation?
        var belowPolicy: String?
        var receivedAt: String?
        var receivedHostNs: Int64?
        var hostBoot: String?
        var bay: String?

        enum CodingKeys: String, CodingKey {
            case clockRelation, belowPolicy, receivedAt, receivedHostNs, hostBoot, bay
        }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let noneReported = (try? c.decode(String.self, forKey: .clockRelation)) != nil
            clockRelation = noneReported ? nil : try c.decodeIfPresent(Relation.self, forKey: .clockRelation)
            belowPolicy = try c.decodeIfPresent(String.self, forKey: .belowPolicy)
            receivedAt = try c.decodeIfPresent(String.self, forKey: .receivedAt)
            receivedHostNs = try c.decodeIfPresent(Int64.self, forKey: .receivedHostNs)
            hostBoot = try c.decodeIfPresent(String.self, forKey: .hostBoot)
            bay = try c.decodeIfPresent(String.self, forKey: .bay)
        }
    }

    /// swing.json: where the catalogue placed the clip, kept beside it so a catalogue made again places it the same.
    public struct Placement: Codable, Sendable, Equatable {
        public var swingId: String
        public var receivedSeq: Int64
        public init(swingId: String, receivedSeq: Int64) {
            self.swingId = swingId
            self.receivedSeq = receivedSeq
        }
    }

    public static let placementFile = "swing.json"

    /// A stored clip's entry, from its own meta.json (what the device said) and host-meta.json (what the host measured
    /// and its clock relation): t0 on the host clock is the device's t0 plus the relation's offset, as uncertain as it.
    /// Throws naming the file and field when meta.json is not one a capture could have written (`ClipMeta.read`), names
    /// another clip than its folder, or host-meta.json or swing.json does not read or holds a figure out of range.
    public static func entry(_ dir: String) throws -> (CatalogueClip, [(name: String, bytes: Int64, xxh3: String)]) {
        let meta = try ClipMeta.read(dir + "/meta.json")
        let folder = (dir as NSString).lastPathComponent
        guard meta.clipId == folder else {
            // The catalogue keys clips by id: a meta.json naming another clip would take that clip's entry.
            throw LibraryError("\(dir)/meta.json: clipId '\(meta.clipId)' is not its folder's '\(folder)'")
        }
        var host = HostNotes?.none
        if FileSystem.exists(dir + "/host-meta.json") {
            do {
                host = try JSONInput.decode(
                    HostNotes.self,
                    from: Data(FileSystem.readSmallFile(dir + "/host-meta.json", limit: 1 << 20, regularFileOnly: true))
                )
            } catch {
                throw LibraryError("\(dir)/host-meta.json: not the host's notes of a clip (\(error))")
            }
        }
        let relation = host?.clockRelation
        if let offset = relation?.offsetNs, !(-ClipMeta.maxTimeNs...ClipMeta.maxTimeNs).contains(offset) {
            throw LibraryError("\(dir)/host-meta.json: clockRelation.offsetNs \(offset) is out of range (±2^60 ns)")
        }
        if let u = relation?.uncertaintyNs, !(0...ClipMeta.maxTimeNs).contains(u) {
            throw LibraryError("\(dir)/host-meta.json: clockRelation.uncertaintyNs \(u) is out of range (0…2^60 ns)")
        }
        if let r = host?.receivedHostNs, !(-ClipMeta.maxTimeNs...ClipMeta.maxTimeNs).contains(r) {
            throw LibraryError("\(dir)/host-meta.json: receivedHostNs \(r) is out of range (±2^60 ns)")
        }
        if let b = host?.bay, let why = PlainName.problem(b, what: "bay") {
            throw LibraryError("\(dir)/host-meta.json: \(why)")
        }
        if let boot = host?.hostBoot, boot.utf8.count > 64 {
            throw LibraryError("\(dir)/host-meta.json: hostBoot is no boot id (\(boot.utf8.count) bytes)")
        }
        let placement = try self.placement(dir)
        let p = meta.captureProfile
        let files = meta.files.map { (name: $0.key, bytes: Int64($0.value.bytes), xxh3: $0.value.xxh3) }.sorted {
            $0.name < $1.name
        }
        let clip = CatalogueClip(
            clipID: meta.clipId, device: meta.device, session: meta.session, sessionID: meta.sessionId,
            t0DeviceNs: meta.t0Ns.value,
            t0HostNs: relation.map { meta.t0Ns.value + $0.offsetNs }, t0UncertaintyNs: relation?.uncertaintyNs,
            frames: meta.frames, captureProfile: "\(p.width)x\(p.height)@\(p.framesPerSecond) \(p.codec)",
            belowPolicy: host?.belowPolicy, receivedAt: host?.receivedAt ?? meta.createdAt, path: dir,
            bytes: files.reduce(0) { $0 + $1.bytes }, swingID: placement?.swingId, receivedSeq: placement?.receivedSeq,
            hostBoot: host?.hostBoot, receivedMonoNs: host?.receivedHostNs, bay: host?.bay,
            trigger: meta.trigger ?? "heard")
        return (clip, files)
    }

    /// swing.json beside the clip, when there is one; one that does not read is an error naming it.
    static func placement(_ dir: String) throws -> Placement? {
        let path = "\(dir)/\(placementFile)"
        guard FileSystem.exists(path) else { return nil }
        let p: Placement
        do {
            p = try JSONInput.decode(
                Placement.self, from: Data(FileSystem.readSmallFile(path, limit: 1 << 16, regularFileOnly: true)))
        } catch {
            throw LibraryError("\(path): not where the catalogue placed the clip (\(error))")
        }
        if let why = PlainName.problem(p.swingId, what: "swingId") { throw LibraryError("\(path): \(why)") }
        guard p.receivedSeq > 0 else {
            throw LibraryError("\(path): receivedSeq \(p.receivedSeq) is no place in an order (1, 2, …)")
        }
        return p
    }

    /// Catalogues the clip stored in `dir` and places it in a swing (`SwingRule`), keeping the placement beside it
    /// (swing.json) and taking back what a person said of it (annotations.json). Another folder holding a clip of the
    /// same id keeps its entry; one no longer there (a library moved, a clip deleted), or this folder spelled
    /// otherwise, is replaced. Returns the entry as stored, and a word on what beside it did not read.
    @discardableResult
    public static func place(_ dir: String, in catalogue: any CatalogueStore, rule: SwingRule = SwingRule()) throws -> (
        clip: CatalogueClip, warning: String?
    ) {
        let (entry, files) = try entry(dir)
        if let other = try catalogue.clip(entry.clipID), other.path != dir,
            FileSystem.exists(other.path + "/meta.json"),
            !FileSystem.sameFile(other.path, dir)
        {
            throw LibraryError(
                "clip id \(entry.clipID) is already catalogued from \(other.path); two folders hold one clip id, the first keeps it"
            )
        }
        var stored = try catalogue.place(entry, files: files, rule: rule)
        var warning: String?
        if let swing = stored.swingID, let seq = stored.receivedSeq {
            let placement = Placement(swingId: swing, receivedSeq: seq)
            if (try? self.placement(dir)) != placement {
                do {
                    try FileSystem.writeAtomically(
                        Array(try JSONEncoder().encode(placement)), to: "\(dir)/\(placementFile)")
                } catch {
                    warning = "\(dir)/\(placementFile) not written (\(error)): a catalogue made again may place it anew"
                }
            }
        }
        // What a person said of it, kept beside it (a catalogue made again has it too). A side file that does not read
        // costs the clip its flags and notes, said, not its place in the catalogue (it is recorded already).
        do {
            if let a = try ClipAnnotations.read(dir) {
                try catalogue.annotate(clipID: stored.clipID, flags: a.flags, notes: a.notes)
                stored.flags = a.flags
                stored.notes = a.notes
            } else if !stored.flags.isEmpty || !stored.notes.isEmpty {
                // A new angle of a swing a coach already marked took the swing's marks: they are kept beside it too.
                try ClipAnnotations.write(flags: stored.flags, notes: stored.notes, to: dir)
            }
        } catch {
            warning = "\(dir): catalogued without the flags and notes beside it: \(error)"
        }
        return (stored, warning)
    }
}

/// The host's library as a whole: its clip folders, and the catalogue kept up with them.
public enum Library {
    /// Every clip folder of a library (LIBRARY/<device>/<clipId>/ with a meta.json), in the order a catalogue made again
    /// should place them: by the order of receipt swing.json records, then those without one by name.
    public static func clipFolders(_ library: String) -> [String] {
        let fm = FileManager.default
        var out: [String] = []
        for device in ((try? fm.contentsOfDirectory(atPath: library)) ?? []).sorted() where !device.hasPrefix(".") {
            for clip in ((try? fm.contentsOfDirectory(atPath: "\(library)/\(device)")) ?? []).sorted()
            where !clip.hasPrefix(".") {
                if fm.fileExists(atPath: "\(library)/\(device)/\(clip)/meta.json") {
                    out.append("\(library)/\(device)/\(clip)")
                }
            }
        }
        let seq = Dictionary(
            uniqueKeysWithValues: out.map { ($0, (try? LibraryClip.placement($0))??.receivedSeq ?? .max) })
        return out.sorted {
            (seq[$0]!, ($0 as NSString).lastPathComponent) < (seq[$1]!, ($1 as NSString).lastPathComponent)
        }
    }

    /// Catalogues each of `dirs`: how many were, and why each other one was not (`DIR: reason`), and the warnings said.
    public static func place(_ dirs: [String], in catalogue: any CatalogueStore) -> (
        recorded: Int, skipped: [String], warnings: [String]
    ) {
        var recorded = 0
        var skipped: [String] = []
        var warnings: [String] = []
        for dir in dirs {
            do {
                let (_, warning) = try LibraryClip.place(dir, in: catalogue)
                if let warning { warnings.append(warning) }
                recorded += 1
            } catch { skipped.append("\(dir): \(error)") }
        }
        return (recorded, skipped, warnings)
    }

    /// Catalogues every clip folder of `library` the catalogue does not hold yet: those stored while the host was stopped
    /// or the catalogue away, and those `make run`'s file sink wrote there.
    public static func catchUp(_ library: String, in catalogue: any CatalogueStore) throws -> (
        recorded: Int, skipped: [String], warnings: [String]
    ) {
        let known = Set(try catalogue.clips().map(\.path))
        return place(clipFolders(library).filter { !known.contains($0) }, in: catalogue)
    }
}
