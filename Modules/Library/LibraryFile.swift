import Foundation
import JSONInput
import Syscall

/// A JSON file the library keeps beside its clips — students.json, bays.json, tags.json, shares.json, a clip's
/// drawings.json and keypositions.json: read whole through JSONInput (nesting bounded) within a size limit, and written
/// whole or not at all, pretty-printed with sorted keys, so a person can read it and a diff of it.
public enum LibraryFile {
    /// The file at `path` as `type`; nil when there is none. One that is not a regular file, is larger than `limit`
    /// bytes or does not read as `type` is a `LibraryError` naming it and saying it is not `what` ("a library's bays").
    public static func read<T: Decodable>(_ type: T.Type, from path: String, limit: Int, what: String) throws -> T? {
        guard FileSystem.exists(path) else { return nil }
        do {
            return try JSONInput.decode(
                type, from: Data(FileSystem.readSmallFile(path, limit: limit, regularFileOnly: true)))
        } catch {
            throw LibraryError("\(path): not \(what) (\(error))")
        }
    }

    /// Writes `value` to `path`, whole or not at all and durably (`FileSystem.writeAtomically`).
    public static func write<T: Encodable>(_ value: T, to path: String) throws {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FileSystem.writeAtomically(Array(try e.encode(value)), to: path)
    }
}
