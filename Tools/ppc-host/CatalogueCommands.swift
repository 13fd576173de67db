import CLI
import Catalogue
import Foundation
import Library
import PayloadSource
import PostgresCatalogue
import Syscall
import Transfer

/// The host's catalogue of a library: where it lives, how a stored clip becomes an entry, and the commands over it.
enum HostCatalogue {
    static func path(_ library: String) -> String { library + "/catalogue.sqlite" }

    static let catalogueOption = Option.value(
        "catalogue", "url",
        help: "postgresql://… for a catalogue a facility's hosts share (default: LIBRARY/catalogue.sqlite).")

    /// The catalogue asked for: PostgreSQL by URL, else SQLite in the library. `waitForServer`: a PostgreSQL server that
    /// cannot be reached now is reconnected to rather than an error (the host starts and takes clips meanwhile).
    static func open(library: String, url: String?, waitForServer: Bool = false) throws -> any CatalogueStore {
        do {
            if let url, url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                return try PostgresCatalogue(url: url, waitForServer: waitForServer)
            }
            if let url {
                throw CommandFailure.usage(
                    "--catalogue '\(url)': expected postgresql://… (or nothing, for SQLite in the library)")
            }
            return try Catalogue(path: path(library))
        } catch let e as CommandFailure {
            throw e
        } catch let e as CatalogueError where e.damaged {
            throw CommandFailure.dataError(
                "\(e): the catalogue is damaged. The library's clip folders are the truth, not it: `ppc-host catalogue rebuild --library \(library)` keeps the damaged file aside and makes a new catalogue from them (flags and notes come back from beside each clip; any not kept there stay only in the damaged file)"
            )
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

    /// Forgets every catalogued clip of `library` whose folder is gone (deleted by hand, a cleanup): the library is the
    /// truth. Of a catalogue several hosts share (`shared`), only clips whose folder lay in this library. When the library
    /// holds no clip folder at all while the catalogue names some there, nothing is forgotten: an unmounted disk or share
    /// looks just so, and its clips would come back. Returns the ids forgotten.
    static func forgetGone(library: String, folders: [String], in catalogue: any CatalogueStore, shared: Bool) throws
        -> [String]
    {
        let root = URL(fileURLWithPath: library).standardizedFileURL.path + "/"
        let gone = try catalogue.clips().filter { c in
            (!shared || URL(fileURLWithPath: c.path).standardizedFileURL.path.hasPrefix(root))
                && !FileSystem.exists(c.path)
        }
        guard !gone.isEmpty else { return [] }
        guard !folders.isEmpty else {
            Terminal.err(
                "ppc-host: \(library) holds no clip folder, yet the catalogue names \(gone.count) there: is its disk or share mounted? Nothing forgotten"
            )
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
            throw CommandFailure.dataError(
                "\(library): no such library directory (--library names the folder ppc-host stores clips in)")
        }
        return library
    }

    static let rebuild = Command(
        "rebuild",
        abstract: "Re-read the library into its catalogue: the files stay the truth, the catalogue is their index.",
        options: [libraryOption, catalogueOption],
        run: { inv in
            let library = try existingLibrary(inv)
            if inv.value("catalogue") == nil {
                // The files are the truth: a damaged index is kept aside, never deleted, and made again from them.
                do { _ = try Catalogue(path: path(library)) } catch let e as CatalogueError where e.damaged {
                    let aside = try setAside(library: library)
                    Terminal.err(
                        "ppc-host: \(e); kept as \(aside), and a new catalogue is made from the library's files (flags and notes come back from beside each clip; any not kept there stay only in the damaged file)"
                    )
                } catch {}  // anything else: said by `open` below
            }
            let catalogue = try open(library: library, url: inv.value("catalogue"))
            let folders = Library.clipFolders(library)
            let (recorded, skipped, warnings) = Library.place(folders, in: catalogue)
            for w in warnings { Terminal.err("ppc-host: \(w)") }
            for s in skipped { Terminal.err("ppc-host: not catalogued: \(s)") }
            Terminal.out(
                "ppc-host: \(recorded) clip(s) catalogued in \(inv.value("catalogue") ?? path(library))\(skipped.isEmpty ? "" : "; \(skipped.count) not (above)")"
            )
            let forgotten = try forgetGone(
                library: library, folders: folders, in: catalogue, shared: inv.value("catalogue") != nil)
            if !forgotten.isEmpty {
                Terminal.out(
                    "ppc-host: \(forgotten.count) clip(s) forgotten, their folders gone from the library: \(forgotten.joined(separator: ", "))"
                )
            }
            return skipped.isEmpty ? .success : .dataError
        })

    static let verify = Command(
        "verify",
        abstract:
            "Check every clip in the library against what its meta.json recorded at mint (each file's size and XXH3): name any damaged since; exit 65 if one is.",
        discussion:
            "A library on a disk or a NAS for years meets bit rot, a bad copy, a hand that deleted a file. The catalogue is only the index; this reads the files themselves.",
        options: [libraryOption, .json],
        run: { inv in
            let library = try existingLibrary(inv)
            let folders = Library.clipFolders(library)
            let damaged = folders.compactMap { dir in
                ClipMeta.bundleProblem(dir, besides: HostStore.hostFiles, clipID: (dir as NSString).lastPathComponent)
                    .map { (clip: dir, why: $0) }
            }
            if inv.flag("json") {
                try Terminal.json(
                    [
                        "library": library, "clips": folders.count,
                        "damaged": damaged.map { ["clip": $0.clip, "why": $0.why] },
                    ] as [String: Any])
            } else {
                for d in damaged { Terminal.err("ppc-host: damaged: \(d.why)") }
                Terminal.out(
                    "ppc-host: \(folders.count - damaged.count) of \(folders.count) clip(s) in \(library) whole\(damaged.isEmpty ? "" : "; \(damaged.count) damaged (above)")"
                )
            }
            return damaged.isEmpty ? .success : .dataError
        })

    static let command = Command(
        "catalogue", abstract: "The library's clip catalogue (SQLite, LIBRARY/catalogue.sqlite).",
        subcommands: [rebuild, verify])

    static let clips = Command(
        "clips",
        abstract:
            "The catalogue's clips, grouped into swings (clips from several devices at one impact, on the host clock).",
        options: [
            libraryOption, catalogueOption, .flag("json", help: "As JSON."),
            .value("device", "id", help: "Only this device's clips."),
        ],
        run: { inv in
            let library = inv.value("library") ?? "library"
            if inv.value("catalogue") == nil, !FileManager.default.fileExists(atPath: path(library)) {
                throw CommandFailure.dataError(
                    "\(path(library)): no catalogue yet (ppc-host catalogue rebuild --library \(library))")
            }
            let all: [CatalogueClip]
            do { all = try open(library: library, url: inv.value("catalogue")).clips() } catch let e as CommandFailure {
                throw e
            } catch {
                throw CommandFailure.failure("\(error)")
            }
            let readable = Catalogue.readable(inv.value("device").map { d in all.filter { $0.device == d } } ?? all)
            for r in readable.refused {
                Terminal.err(
                    "ppc-host: left out: \(r.problem) (`ppc-host catalogue rebuild` records it again from its files)")
            }
            let swings = Array(Catalogue.placedSwings(readable.clips).reversed())  // oldest first, as a listing reads
            if inv.flag("json") {
                try Terminal.json(
                    swings.enumerated().map { i, s in
                        [
                            "swing": i + 1, "t0HostNs": s.first?.t0HostNs as Any? ?? NSNull(),
                            "angles": s.map { c in
                                [
                                    "clipId": c.clipID, "device": c.device, "session": c.session,
                                    "t0DeviceNs": c.t0DeviceNs,
                                    "t0HostNs": c.t0HostNs as Any? ?? NSNull(),
                                    "t0UncertaintyNs": c.t0UncertaintyNs as Any? ?? NSNull(),
                                    "frames": c.frames, "captureProfile": c.captureProfile,
                                    "belowPolicy": c.belowPolicy as Any? ?? NSNull(),
                                    "bytes": c.bytes, "path": c.path, "flags": c.flags.sorted().map(\.rawValue),
                                    "notes": c.notes,
                                ] as [String: Any]
                            },
                        ] as [String: Any]
                    })
            } else {
                if swings.isEmpty { Terminal.out("no clips catalogued") }
                for (i, s) in swings.enumerated() {
                    Terminal.out("swing \(i + 1): \(s.count) angle(s)")
                    for c in s {
                        let said =
                            (c.flags.isEmpty ? "" : "  [\(ClipFlag.text(c.flags))]")
                            + (c.notes.isEmpty ? "" : "  “\(StandardStream.visible(c.notes, newlines: true))”")
                        Terminal.out(
                            "  \(c.device)  \(c.clipID)  \(c.captureProfile)  \(c.frames) frames\(c.belowPolicy.map { "  ⚠ \($0)" } ?? "")\(said)"
                        )
                    }
                }
            }
            return readable.refused.isEmpty ? .success : .dataError
        })
}
