import CCairo

/// A picture drawn with cairo (Debian's libcairo2): lines, arcs, filled shapes and text, antialiased, into one RGBA
/// image a compositor lays over video frames. The only importer of CCairo.
///
/// Pixels are cairo's ARGB32: 32 bits a pixel in the machine's byte order (B, G, R, A in memory on x86 and arm64),
/// alpha premultiplied — what libavfilter's `overlay` takes as `bgra` with `alpha=premultiplied`. Coordinates are
/// pixels from the top left.
public final class Raster {
    /// The largest side drawn (8K): a picture is width × height × 4 bytes, and nothing ppc shows is larger.
    public static let maxSide = 8_192

    public struct Color: Sendable, Equatable {
        public var red: Double, green: Double, blue: Double, alpha: Double
        public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
            self.red = red
            self.green = green
            self.blue = blue
            self.alpha = alpha
        }

        /// `#rrggbb` (the studio's colours); nil when it is not one.
        public init?(hex: String, alpha: Double = 1) {
            let b = Array(hex.utf8)
            guard b.count == 7, b[0] == UInt8(ascii: "#") else { return nil }
            var v = [Double]()
            for i in stride(from: 1, to: 7, by: 2) {
                guard let n = UInt8(String(decoding: b[i..<(i + 2)], as: UTF8.self), radix: 16) else { return nil }
                v.append(Double(n) / 255)
            }
            self.init(red: v[0], green: v[1], blue: v[2], alpha: alpha)
        }
    }

    public struct RasterError: Error, CustomStringConvertible {
        public let description: String
    }

    public let width: Int
    public let height: Int
    let surface: OpaquePointer
    let cairo: OpaquePointer

    /// A clear (fully transparent) `width` × `height` picture.
    public init(width: Int, height: Int) throws(RasterError) {
        guard (1...Self.maxSide).contains(width), (1...Self.maxSide).contains(height) else {
            throw RasterError(description: "a picture of \(width)x\(height): each side 1…\(Self.maxSide) pixels")
        }
        guard let s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(width), Int32(height)) else {
            throw RasterError(description: "cairo: no surface of \(width)x\(height)")
        }
        guard cairo_surface_status(s) == CAIRO_STATUS_SUCCESS, let c = cairo_create(s) else {
            let why = String(cString: cairo_status_to_string(cairo_surface_status(s)))
            cairo_surface_destroy(s)
            throw RasterError(description: "cairo: a surface of \(width)x\(height): \(why)")
        }
        surface = s
        cairo = c
        self.width = width
        self.height = height
        cairo_set_line_cap(c, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(c, CAIRO_LINE_JOIN_ROUND)
    }

    deinit {
        cairo_destroy(cairo)
        cairo_surface_destroy(surface)
    }

    func use(_ color: Color) { cairo_set_source_rgba(cairo, color.red, color.green, color.blue, color.alpha) }

    /// A polyline through `points` (closed back to the first when `closed`), `lineWidth` pixels wide.
    public func stroke(_ points: [(x: Double, y: Double)], color: Color, lineWidth: Double, closed: Bool = false) {
        guard let first = points.first else { return }
        cairo_new_path(cairo)
        cairo_move_to(cairo, first.x, first.y)
        for p in points.dropFirst() { cairo_line_to(cairo, p.x, p.y) }
        if closed { cairo_close_path(cairo) }
        use(color)
        cairo_set_line_width(cairo, lineWidth)
        cairo_stroke(cairo)
    }

    /// A filled polygon through `points`.
    public func fill(_ points: [(x: Double, y: Double)], color: Color) {
        guard let first = points.first else { return }
        cairo_new_path(cairo)
        cairo_move_to(cairo, first.x, first.y)
        for p in points.dropFirst() { cairo_line_to(cairo, p.x, p.y) }
        cairo_close_path(cairo)
        use(color)
        cairo_fill(cairo)
    }

    /// A circle's outline (`lineWidth` > 0) or a filled disc (`lineWidth` 0).
    public func circle(x: Double, y: Double, radius: Double, color: Color, lineWidth: Double) {
        cairo_new_path(cairo)
        cairo_arc(cairo, x, y, max(0, radius), 0, 2 * Double.pi)
        use(color)
        if lineWidth > 0 {
            cairo_set_line_width(cairo, lineWidth)
            cairo_stroke(cairo)
        } else {
            cairo_fill(cairo)
        }
    }

    /// `text` with its baseline's left end at (x, y), `size` pixels high, outlined in `outline` (for reading over
    /// any picture) when given. cairo's own sans-serif face (fontconfig's choice).
    public func text(_ text: String, x: Double, y: Double, size: Double, color: Color, outline: Color? = nil) {
        cairo_select_font_face(cairo, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD)
        cairo_set_font_size(cairo, size)
        cairo_new_path(cairo)
        cairo_move_to(cairo, x, y)
        cairo_text_path(cairo, text)
        if let outline {
            use(outline)
            cairo_set_line_width(cairo, max(1, size / 6))
            cairo_stroke_preserve(cairo)
        }
        use(color)
        cairo_fill(cairo)
    }

    /// The picture's bytes, row by row (`stride` bytes a row, ≥ width × 4): valid only inside `body`.
    public func withPixels<R>(_ body: (_ bytes: UnsafeRawBufferPointer, _ stride: Int) throws -> R) rethrows -> R {
        cairo_surface_flush(surface)
        let stride = Int(cairo_image_surface_get_stride(surface))
        let data = UnsafeRawPointer(cairo_image_surface_get_data(surface))
        return try body(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : stride * height), stride)
    }

    /// The pixel at (x, y) as (red, green, blue, alpha), alpha premultiplied: what a test reads back.
    public func pixel(x: Int, y: Int) -> (red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8) {
        withPixels { bytes, stride in
            let o = y * stride + x * 4
            return (bytes[o + 2], bytes[o + 1], bytes[o], bytes[o + 3])
        }
    }
}
