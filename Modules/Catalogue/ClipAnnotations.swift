import Foundation
import JSONInput
import Syscall

/// What a person said of a clip — its flags and notes — kept beside the clip as well as in the catalogue
/// (`LIBRARY/<device>/<clipId>/annotations.json`), so that a catalogue made again from the library (`ppc-host catalogue
/// rebuild`, after a damaged one is set aside) has them too. The catalogue is the index; the clip's folder is the truth.
public enum ClipAnnotations {
    public static let fileName = "annotations.json"

    /// Writes `flags` and `notes` beside the clip in `directory`, whole or not at all and durably (`FileSystem.writeAtomically`:
    /// a temporary file beside it, fsynced, renamed over).
    public static func write(flags: Set<ClipFlag>, notes: String, to directory: String) throws {
        let object: [String: Any] = [
            "flags": flags.sorted().map(\.rawValue), "notes": notes, "format": "ppc-clip-annotations", "version": 1,
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
        try FileSystem.writeAtomically([UInt8](data), to: "\(directory)/\(fileName)")
    }

    /// The flags and notes kept beside the clip in `directory`; nil when there are none. A file that is not one is
    /// an error naming it (a flag a newer host knows is passed over, as the catalogue does).
    public static func read(_ directory: String) throws -> (flags: Set<ClipFlag>, notes: String)? {
        let path = "\(directory)/\(fileName)"
        guard FileSystem.exists(path) else { return nil }
        let data: Data
        do { data = Data(try FileSystem.readSmallFile(path, limit: 1 << 20, regularFileOnly: true)) } catch {
            throw CatalogueError("\(path): cannot read (\(error))")
        }
        guard let o = try? JSONInput.object(data),
            let flags = o["flags"] as? [String], let notes = o["notes"] as? String
        else {
            throw CatalogueError("\(path): not a clip's annotations (expected {\"flags\": [...], \"notes\": \"...\"})")
        }
        return (Set(flags.compactMap(ClipFlag.init(rawValue:))), notes)
    }
}
