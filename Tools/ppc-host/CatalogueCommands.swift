import CLI
import Catalogue
import PostgresCatalogue
import Foundation
import PayloadSource
import Syscall
import Transfer
import JSONInput

/// The host's catalogue of a library: where it lives, how a stored clip becomes an entry, and the commands over it.
enum HostCatalogue {
    static func path(_ library: String) -> String { library + "/catalogue.sqlite" }

    static let catalogueOption = Option.value(
        "catalogue", "url", help: "postgresql://… for a catalogue a facility's hosts share (default: LIBRARY/catalogue.sqlite).")

    /// The catalogue asked for: PostgreSQL by URL, else SQLite in the library. `waitForServer`: a PostgreSQL server that
    /// cannot be reached now is reconnected to rather than an error (the host starts and takes clips meanwhile).
    static func open(library: String, url: String?, waitForServer: Bool = false) throws -> any CatalogueStore {
        do {
            if let url, url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") { return try PostgresCatalogue(url: url, waitForServer: waitForServer) }
            if let url { throw CommandFailure.usage("--catalogue '\(url)': expected postgresql://… (or nothing, for SQLite in the library)") }
            return try Catalogue(path: path(library))
        } catch let e as CommandFailure {
            throw e
        } catch let e as CatalogueError where e.damaged {
            throw CommandFailure.dataError(
                "\(e): the catalogue is damaged. The library's clip folders are the truth, not it: `ppc-host catalogue rebuild --library \(library)` keeps the damaged file aside and makes a new catalogue from them (flags and notes come back from beside each clip; any not kept there stay only in the damaged file)")
        } catch { throw CommandFailure.failure("\(error)") }
    }

    /// A damaged SQLite catalogue (and its -wal and -shm) moved aside as `catalogue.sqlite.damaged-<UTC time>`, so a
    /// new one can be made from the library's files and nothing of the old one is destroyed; returns the new name.
    static func setAside(library: String) throws -> String {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let aside = "\(path(library)).damaged-\(stamp)"
        for suffix in ["", "-wal", "-shm"] where FileSystem.exists(path(library) + suffix) {
            try FileSystem.rename(path(library) + suffix, aside + suffix)
        }
        try FileSystem.syncDirectory(library)
        return aside
    }

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

        enum CodingKeys: String, CodingKey { case clockRelation, belowPolicy, receivedAt }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let noneReported = (try? c.decode(String.self, forKey: .clockRelation)) != nil
            clockRelation = noneReported ? nil : try c.decodeIfPresent(Relation.self, forKey: .clockRelation)
            belowPolicy = try c.decodeIfPresent(String.self, forKey: .belowPolicy)
            receivedAt = try c.decodeIfPresent(String.self, forKey: .receivedAt)
        }
    }

    /// A stored clip's entry, from its own meta.json (what the device said) and host-meta.json (what the host measured
    /// and its clock relation): t0 on the host clock is the device's t0 plus the relation's offset, as uncertain as it.
    /// Throws naming the file and field when meta.json is not one a capture could have written (`ClipMeta.read`), names
    /// another clip than its folder, or host-meta.json does not read or holds an offset out of range.
    static func entry(_ dir: String) throws -> (CatalogueClip, [(name: String, bytes: Int64, xxh3: String)]) {
        let meta = try ClipMeta.read(dir + "/meta.json")
        let folder = (dir as NSString).lastPathComponent
        guard meta.clipId == folder else {
            // The catalogue keys clips by id: a meta.json naming another clip would take that clip's entry.
            throw CommandFailure.dataError("\(dir)/meta.json: clipId '\(meta.clipId)' is not its folder's '\(folder)'")
        }
        var host = HostNotes?.none
        if FileSystem.exists(dir + "/host-meta.json") {
            do { host = try JSONInput.decode(HostNotes.self, from: Data(FileSystem.readSmallFile(dir + "/host-meta.json", limit: 1 << 20, regularFileOnly: true))) } catch {
                throw CommandFailure.dataError("\(dir)/host-meta.json: not the host's notes of a clip (\(error))")
            }
        }
        let relation = host?.clockRelation
        if let offset = relation?.offsetNs, !(-ClipMeta.maxTimeNs...ClipMeta.maxTimeNs).contains(offset) {
            throw CommandFailure.dataError("\(dir)/host-meta.json: clockRelation.offsetNs \(offset) is out of range (±2^60 ns)")
        }
        if let u = relation?.uncertaintyNs, !(0...ClipMeta.maxTimeNs).contains(u) {
            throw CommandFailure.dataError("\(dir)/host-meta.json: clockRelation.uncertaintyNs \(u) is out of range (0…2^60 ns)")
        }
        let p = meta.captureProfile
        let files = meta.files.map { (name: $0.key, bytes: Int64($0.value.bytes), xxh3: $0.value.xxh3) }.sorted { $0.name < $1.name }
        let clip = CatalogueClip(
            clipID: meta.clipId, device: meta.device, session: meta.session, sessionID: meta.sessionId, t0DeviceNs: meta.t0Ns.value,
            t0HostNs: relation.map { meta.t0Ns.value + $0.offsetNs }, t0UncertaintyNs: relation?.uncertaintyNs,
            frames: meta.frames, captureProfile: "\(p.width)x\(p.height)@\(p.framesPerSecond) \(p.codec)",
            belowPolicy: host?.belowPolicy, receivedAt: host?.receivedAt ?? meta.createdAt, path: dir,
            bytes: files.reduce(0) { $0 + $1.bytes })
        return (clip, files)
    }

    /// Records the clip stored in `dir` (its `entry`) in `catalogue`; returns the entry.
    @discardableResult
    static func record(_ dir: String, in catalogue: any CatalogueStore) throws -> CatalogueClip {
        let (clip, files) = try entry(dir)
        // The catalogue keys clips by id. Another folder holding a clip of the same id (two devices' folders, one
        // careless or hostile) keeps its entry; one no longer there (a library moved, a clip deleted), or this folder
        // spelled otherwise (`--library ./lib` one day, `lib` the next), is replaced.
        if let other = try catalogue.clip(clip.clipID), other.path != dir, FileSystem.exists(other.path + "/meta.json"),
            !FileSystem.sameFile(other.path, dir)
        {
            throw CommandFailure.dataError("clip id \(clip.clipID) is already catalogued from \(other.path); two folders hold one clip id, the first keeps it")
        }
        try catalogue.record(clip, files: files)
        // What a person said of it, kept beside it (a catalogue made again has it too). A side file that does not read
        // costs the clip its flags and notes, said, not its place in the catalogue (it is recorded already).
        do {
            if let a = try ClipAnnotations.read(dir) { try catalogue.annotate(clipID: clip.clipID, flags: a.flags, notes: a.notes) }
        } catch {
            Terminal.err("ppc-host: \(dir): catalogued without the flags and notes beside it: \(error)")
        }
        return clip
    }

    /// Records each of `dirs`: how many were, and why each other one was not (`DIR: reason`).
    /// Catalogues every clip folder of `library` the catalogue does not hold yet: those stored while the host was stopped
    /// or the catalogue away, and those `make run`'s file sink wrote there.
    static func catchUp(library: String, in catalogue: any CatalogueStore) throws -> (recorded: Int, skipped: [String]) {
        let known = Set(try catalogue.clips().map(\.path))
        return record(clipFolders(library).filter { !known.contains($0) }, in: catalogue)
    }

    static func record(_ dirs: [String], in catalogue: any CatalogueStore) -> (recorded: Int, skipped: [String]) {
        var recorded = 0, skipped: [String] = []
        for dir in dirs {
            do {
                try record(dir, in: catalogue)
                recorded += 1
            } catch { skipped.append("\(dir): \(error)") }
        }
        return (recorded, skipped)
    }

    /// Every clip folder of a library (LIBRARY/<device>/<clipId>/ with a meta.json).
    static func clipFolders(_ library: String) -> [String] {
        let fm = FileManager.default
        var out: [String] = []
        for device in ((try? fm.contentsOfDirectory(atPath: library)) ?? []).sorted() where !device.hasPrefix(".") {
            for clip in ((try? fm.contentsOfDirectory(atPath: "\(library)/\(device)")) ?? []).sorted() where !clip.hasPrefix(".") {
                if fm.fileExists(atPath: "\(library)/\(device)/\(clip)/meta.json") { out.append("\(library)/\(device)/\(clip)") }
            }
        }
        return out
    }

    /// Forgets every catalogued clip of `library` whose folder is gone (deleted by hand, a cleanup): the library is the
    /// truth. Of a catalogue several hosts share (`shared`), only clips whose folder lay in this library. When the library
    /// holds no clip folder at all while the catalogue names some there, nothing is forgotten: an unmounted disk or share
    /// looks just so, and its clips would come back. Returns the ids forgotten.
    static func forgetGone(library: String, folders: [String], in catalogue: any CatalogueStore, shared: Bool) throws -> [String] {
        let root = URL(fileURLWithPath: library).standardizedFileURL.path + "/"
        let gone = try catalogue.clips().filter { c in
            (!shared || URL(fileURLWithPath: c.path).standardizedFileURL.path.hasPrefix(root)) && !FileSystem.exists(c.path)
        }
        guard !gone.isEmpty else { return [] }
        guard !folders.isEmpty else {
            Terminal.err("ppc-host: \(library) holds no clip folder, yet the catalogue names \(gone.count) there: is its disk or share mounted? Nothing forgotten")
            return []
        }
        for c in gone { try catalogue.forget(clipID: c.clipID) }
        return gone.map(\.clipID)
    }

    static let libraryOption = Option.value("library", "dir", help: "The library (default ./library).")

    /// `--library` (default ./library), which must be a directory already: a command over a library never makes one.
    static func existingLibrary(_ inv: Invocation) throws(CommandFailure) -> String {
        let library = inv.value("library") ?? "library"
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: library, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CommandFailure.dataError("\(library): no such library directory (--library names the folder ppc-host stores clips in)")
        }
        return library
    }

    static let rebuild = Command(
        "rebuild", abstract: "Re-read the library into its catalogue: the files stay the truth, the catalogue is their index.",
        options: [libraryOption, catalogueOption],
        run: { inv in
            let library = try existingLibrary(inv)
            if inv.value("catalogue") == nil {
                // The files are the truth: a damaged index is kept aside, never deleted, and made again from them.
                do { _ = try Catalogue(path: path(library)) } catch let e as CatalogueError where e.damaged {
                    let aside = try setAside(library: library)
                    Terminal.err("ppc-host: \(e); kept as \(aside), and a new catalogue is made from the library's files (flags and notes come back from beside each clip; any not kept there stay only in the damaged file)")
                } catch {}  // anything else: said by `open` below
            }
            let catalogue = try open(library: library, url: inv.value("catalogue"))
            let folders = clipFolders(library)
            let (recorded, skipped) = record(folders, in: catalogue)
            for s in skipped { Terminal.err("ppc-host: not catalogued: \(s)") }
            Terminal.out("ppc-host: \(recorded) clip(s) catalogued in \(inv.value("catalogue") ?? path(library))\(skipped.isEmpty ? "" : "; \(skipped.count) not (above)")")
            let forgotten = try forgetGone(library: library, folders: folders, in: catalogue, shared: inv.value("catalogue") != nil)
            if !forgotten.isEmpty {
                Terminal.out("ppc-host: \(forgotten.count) clip(s) forgotten, their folders gone from the library: \(forgotten.joined(separator: ", "))")
            }
            return skipped.isEmpty ? .success : .dataError
        })

    static let verify = Command(
        "verify",
        abstract: "Check every clip in the library against what its meta.json recorded at mint (each file's size and XXH3): name any damaged since; exit 65 if one is.",
        discussion: "A library on a disk or a NAS for years meets bit rot, a bad copy, a hand that deleted a file. The catalogue is only the index; this reads the files themselves.",
        options: [libraryOption, .json],
        run: { inv in
            let library = try existingLibrary(inv)
            let folders = clipFolders(library)
            let damaged = folders.compactMap { dir in
                ClipMeta.bundleProblem(dir, besides: HostStore.hostFiles, clipID: (dir as NSString).lastPathComponent).map { (clip: dir, why: $0) }
            }
            if inv.flag("json") {
                try Terminal.json(["library": library, "clips": folders.count, "damaged": damaged.map { ["clip": $0.clip, "why": $0.why] }] as [String: Any])
            } else {
                for d in damaged { Terminal.err("ppc-host: damaged: \(d.why)") }
                Terminal.out("ppc-host: \(folders.count - damaged.count) of \(folders.count) clip(s) in \(library) whole\(damaged.isEmpty ? "" : "; \(damaged.count) damaged (above)")")
            }
            return damaged.isEmpty ? .success : .dataError
        })

    static let command = Command("catalogue", abstract: "The library's clip catalogue (SQLite, LIBRARY/catalogue.sqlite).", subcommands: [rebuild, verify])

    static let clips = Command(
        "clips", abstract: "The catalogue's clips, grouped into swings (clips from several devices at one impact, on the host clock).",
        options: [libraryOption, catalogueOption, .flag("json", help: "As JSON."), .value("device", "id", help: "Only this device's clips.")],
        run: { inv in
            let library = inv.value("library") ?? "library"
            if inv.value("catalogue") == nil, !FileManager.default.fileExists(atPath: path(library)) {
                throw CommandFailure.dataError("\(path(library)): no catalogue yet (ppc-host catalogue rebuild --library \(library))")
            }
            let all: [CatalogueClip]
            do { all = try open(library: library, url: inv.value("catalogue")).clips() } catch let e as CommandFailure { throw e } catch {
                throw CommandFailure.failure("\(error)")
            }
            let readable = Catalogue.readable(inv.value("device").map { d in all.filter { $0.device == d } } ?? all)
            for r in readable.refused { Terminal.err("ppc-host: left out: \(r.problem) (`ppc-host catalogue rebuild` records it again from its files)") }
            let swings = Catalogue.swings(readable.clips)
            if inv.flag("json") {
                try Terminal.json(swings.enumerated().map { i, s in
                    ["swing": i + 1, "t0HostNs": s.first?.t0HostNs as Any? ?? NSNull(),
                     "angles": s.map { c in
                         ["clipId": c.clipID, "device": c.device, "session": c.session, "t0DeviceNs": c.t0DeviceNs,
                          "t0HostNs": c.t0HostNs as Any? ?? NSNull(), "t0UncertaintyNs": c.t0UncertaintyNs as Any? ?? NSNull(),
                          "frames": c.frames, "captureProfile": c.captureProfile, "belowPolicy": c.belowPolicy as Any? ?? NSNull(),
                          "bytes": c.bytes, "path": c.path, "flags": c.flags.sorted().map(\.rawValue), "notes": c.notes] as [String: Any]
                     }] as [String: Any]
                })
            } else {
                if swings.isEmpty { Terminal.out("no clips catalogued") }
                for (i, s) in swings.enumerated() {
                    Terminal.out("swing \(i + 1): \(s.count) angle(s)")
                    for c in s {
                        let said = (c.flags.isEmpty ? "" : "  [\(ClipFlag.text(c.flags))]") + (c.notes.isEmpty ? "" : "  “\(StandardStream.visible(c.notes, newlines: true))”")
                        Terminal.out("  \(c.device)  \(c.clipID)  \(c.captureProfile)  \(c.frames) frames\(c.belowPolicy.map { "  ⚠ \($0)" } ?? "")\(said)")
                    }
                }
            }
            return readable.refused.isEmpty ? .success : .dataError
        })
}
