import NIOHTTP2

/// The connection-level receive window of an HTTP/2 connection driven frame by frame, with no
/// stream multiplexer.
///
/// Every connection starts with a 65,535-byte window (RFC 9113 §6.9.2) that SETTINGS cannot
/// change: only WINDOW_UPDATE frames on stream 0 open it again. swift-nio-http2's multiplexer sends
/// them; without one, nothing does, and the peer stops sending DATA once the first 64 KiB of bodies
/// has arrived: every later request or answer waits forever on a connection that looks healthy.
/// This keeps the window near `target`, topping it up once half of it is used.
public struct ConnectionReceiveWindow: Sendable {
    public static let initial = 65_535

    public let target: Int
    /// What the peer may still send before it must wait for a WINDOW_UPDATE.
    public private(set) var available = ConnectionReceiveWindow.initial

    public init(target: Int) {
        precondition(target > 0 && target <= Int(Int32.max), "a window is 1 to 2^31 - 1 bytes")
        self.target = target
    }

    /// The WINDOW_UPDATE that opens the window to `target`, when it is below it: to send once the
    /// connection preface is out.
    public mutating func opening() -> HTTP2Frame? {
        let increment = target - available
        guard increment > 0 else { return nil }
        available = target
        return HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))
    }

    /// Counts a DATA frame received, on any stream, wanted or not: the WINDOW_UPDATE to send when
    /// half the window is used.
    public mutating func received(_ data: HTTP2Frame.FramePayload.Data) -> HTTP2Frame? {
        // Padding is flow-controlled too: its bytes and the one byte giving its length.
        available -= data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
        return available <= target / 2 ? opening() : nil
    }
}
