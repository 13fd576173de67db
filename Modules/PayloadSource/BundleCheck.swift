import Checksum
import Foundation
import Syscall

extension ClipMeta {
    /// The files of a bundle, checked against the sizes and XXH3s its `meta.json` recorded when the clip was minted;
    /// returns the meta. Throws `.badBundle` naming the file and what is wrong when meta.json cannot be read, or a file
    /// it lists is missing, has another size, or other bytes — damaged on this disk since it was minted.
    ///
    /// A bundle leaves a device's outbox only once a host confirms it, and the host confirms what it was sent: a file
    /// damaged before the send would be confirmed as sent and the device's copy removed. So a sender checks first.
    ///
    /// `besides` names files another party adds beside the minted ones and that meta.json cannot list (a host's
    /// host-meta.json and viewing copy); any other file there is refused. `clipID`, when given, is the clip the
    /// bundle's folder is named for (in an outbox, the id it is sent as; in a library, the id it was received as): a
    /// meta.json naming another clip is refused too — a host would store or catalogue one clip under another's id.
    public static func verifyBundle(_ directory: String, besides: Set<String> = [], clipID: String? = nil)
        throws(PayloadError) -> ClipMeta
    {
        let meta: ClipMeta
        do { meta = try ClipMeta.read(directory + "/meta.json") } catch let e as PayloadError { throw e } catch {
            throw PayloadError(.badBundle, "\(directory)/meta.json: \(error)")
        }
        if let clipID, meta.clipId != clipID {
            throw PayloadError(
                .badBundle,
                "\(directory)/meta.json: clipId '\(meta.clipId)' is not '\(clipID)', the clip its folder holds")
        }
        let present: [String]
        do { present = try FileSystem.list(directory) } catch {
            throw PayloadError(.badBundle, "\(directory): \(error)")
        }
        if let extra = present.sorted().first(where: {
            $0 != "meta.json" && meta.files[$0] == nil && !besides.contains($0)
        }) {
            throw PayloadError(
                .badBundle, "\(directory)/\(extra): not among the files meta.json recorded when the clip was minted")
        }
        for (name, file) in meta.files.sorted(by: { $0.key < $1.key }) {
            let path = "\(directory)/\(name)"
            guard let recorded = UInt64(file.xxh3, radix: 16) else {
                throw PayloadError(.badBundle, "\(directory)/meta.json: files.\(name).xxh3 '\(file.xxh3)' is not hex")
            }
            guard FileSystem.exists(path) else {
                throw PayloadError(.badBundle, "\(path): missing (meta.json recorded it when the clip was minted)")
            }
            do {
                let fd = try FileDescriptor.openRegularFile(path)
                let size = Int(try fd.size())
                guard size == file.bytes else {
                    throw PayloadError(
                        .badBundle,
                        "\(path): \(size) bytes, but meta.json recorded \(file.bytes) when the clip was minted")
                }
                let map = try FileMapping(fd, length: size, writable: false)
                let sum = XXH3.hash(UnsafeRawBufferPointer(map.bytes))
                guard sum == recorded else {
                    throw PayloadError(
                        .badBundle,
                        "\(path): its bytes are not those minted (XXH3 \(XXH3.hex(sum)), meta.json recorded \(file.xxh3))"
                    )
                }
            } catch let e as PayloadError {
                throw e
            } catch {
                throw PayloadError(.badBundle, "\(path): \(error)")
            }
        }
        return meta
    }

    /// What `verifyBundle` finds wrong with the bundle in `directory`, or nil when it is whole: for a caller that
    /// reports rather than stops (a status, a library's verify, the host marking what it received).
    public static func bundleProblem(_ directory: String, besides: Set<String> = [], clipID: String? = nil) -> String? {
        do {
            _ = try verifyBundle(directory, besides: besides, clipID: clipID)
            return nil
        } catch { return error.message }
    }
}
