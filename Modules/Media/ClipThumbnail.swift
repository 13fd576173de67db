/// A clip's still: the frame at a moment (a swing's impact), scaled to fit a list's row, as a JPEG — what a list of
/// thousands of swings shows instead of a video element each.
public enum ClipThumbnail {
    /// The largest side of a still (assumed: a list row's picture at twice its CSS size for a sharp screen).
    public static let maxSide = 320

    /// The first frame of `clip` at or after `atNs` (on the clip's timeline; the last frame when it ends first), fitting
    /// `maxSide` with its aspect kept, as JPEG bytes. Decodes from the start: a clip is seconds long.
    public static func jpeg(clip path: String, atNs: Int64, maxSide: Int = maxSide) throws -> [UInt8] {
        let reader = try MediaReader(path)
        guard let v = reader.video, v.width > 0, v.height > 0 else {
            throw MediaError(operation: "still", path: path, "no video stream")
        }
        let scale = min(1, Double(maxSide) / Double(max(v.width, v.height)))
        let size = (
            width: max(2, Int(Double(v.width) * scale) & ~1), height: max(2, Int(Double(v.height) * scale) & ~1)
        )
        reader.outputSize = size
        let lumaStride = size.width
        let chromaStride = size.width
        var luma = [UInt8](repeating: 0, count: lumaStride * size.height)
        var chroma = [UInt8](repeating: 128, count: chromaStride * (size.height / 2))
        var found = false
        while true {
            let frame = try luma.withUnsafeMutableBufferPointer { l in
                try chroma.withUnsafeMutableBufferPointer { c in
                    try reader.readVideo(
                        luma: l.baseAddress!, lumaStride: lumaStride, chroma: c.baseAddress!, chromaStride: chromaStride
                    )
                }
            }
            guard let frame else { break }
            found = true
            if frame.timeNs >= atNs { break }
        }
        guard found else { throw MediaError(operation: "still", path: path, "no frame decoded") }
        let encoder = try JPEGEncoder(width: size.width, height: size.height, quality: 5)
        return try luma.withUnsafeBufferPointer { l in
            try chroma.withUnsafeBufferPointer { c in
                try encoder.encode(
                    luma: l.baseAddress!, lumaStride: lumaStride, chroma: c.baseAddress!, chromaStride: chromaStride)
            }
        }
    }
}
