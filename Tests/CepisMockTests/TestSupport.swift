import CepisTestSupport
import Foundation
import Testing

@testable import CepisMock

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// All suites of this target run one at a time: the leak test counts process-wide descriptors
/// and threads.
@Suite(.serialized) enum MockTests {}

/// A parsed HTTP response read from a raw socket.
struct RawResponse {
  var status: Int
  var headers: [String: String]
  var body: [UInt8]
  var text: String { String(decoding: body, as: UTF8.self) }

  func json() throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
  }
}

enum RawError: Error {
  case connect
  case closed([UInt8])
}

/// A minimal blocking HTTP/1.1 client over a raw socket (5 s receive timeout).
final class RawClient {
  let fd: Int32
  var pending: [UInt8] = []

  init(port: Int, timeout: Int = 5) throws {
    #if canImport(Glibc)
      fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
      fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    var tv = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    #if canImport(Darwin)
      var one: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    #endif
    var address = loopbackSocketAddress(port: port)
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    // Not closed here: `deinit` runs even when this initializer throws (every stored
    // property is set by then), and a second `close` would close whatever the process opened
    // under the same number in between (another test's socket or cache file).
    guard result == 0 else { throw RawError.connect }
  }

  deinit { close(fd) }

  func send(_ text: String) { send(Array(text.utf8)) }

  func send(_ bytes: [UInt8]) {
    #if canImport(Glibc)
      let flags = Int32(MSG_NOSIGNAL)
    #else
      let flags: Int32 = 0
    #endif
    var offset = 0
    while offset < bytes.count {
      let sent = bytes[offset...].withUnsafeBytes {
        systemSend(fd, $0.baseAddress, $0.count, flags)
      }
      if sent <= 0 { return }
      offset += sent
    }
  }

  /// Reads more bytes; returns false on EOF, reset or timeout.
  func fill() -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    let count = recv(fd, &chunk, chunk.count, 0)
    guard count > 0 else { return false }
    pending += chunk[0..<count]
    return true
  }

  /// The result of the last read: 0 (EOF), or the errno of a failure.
  func readToEnd() -> (bytes: [UInt8], errno: Int32) {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = recv(fd, &chunk, chunk.count, 0)
      if count > 0 {
        pending += chunk[0..<count]
        continue
      }
      let result = (pending, count == 0 ? 0 : errno)
      pending = []
      return result
    }
  }

  /// Reads one response (Content-Length or chunked bodies are not supported: use readToEnd).
  func readResponse() throws -> RawResponse {
    while true {
      if let end = findHeadEnd() {
        let headText = String(decoding: pending[0..<end], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let status = Int(statusLine.split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
          let parts = line.split(separator: ":", maxSplits: 1)
          headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingSpaces : ""
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while pending.count < end + 4 + length {
          guard fill() else { throw RawError.closed(pending) }
        }
        let body = Array(pending[(end + 4)..<(end + 4 + length)])
        pending.removeFirst(end + 4 + length)
        return RawResponse(status: status, headers: headers, body: body)
      }
      guard fill() else { throw RawError.closed(pending) }
    }
  }

  private func findHeadEnd() -> Int? {
    guard pending.count >= 4 else { return nil }
    for index in 0...(pending.count - 4)
    where pending[index] == 13 && pending[index + 1] == 10 && pending[index + 2] == 13
      && pending[index + 3] == 10
    {
      return index
    }
    return nil
  }

  func get(_ path: String, headers: [String: String] = [:]) throws -> RawResponse {
    var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for (name, value) in headers { request += "\(name): \(value)\r\n" }
    send(request + "\r\n")
    return try readResponse()
  }
}

private func systemSend(
  _ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int, _ flags: Int32
) -> Int {
  send(fd, pointer, count, flags)
}

/// One request on a fresh connection.
func fetch(_ server: MockServer, _ path: String, headers: [String: String] = [:]) throws
  -> RawResponse
{
  try RawClient(port: server.port).get(path, headers: headers)
}

/// Starts a server, runs `body`, stops it (even on failure).
func withServer<T>(
  _ configuration: MockServer.Configuration = .init(),
  _ body: (MockServer) async throws -> T
) async throws -> T {
  try await MockServer.withServer(configuration, body)
}

/// The rows of a CSV body (LF or CRLF), parsed with RFC 4180 quoting.
func csvRows(_ body: [UInt8]) -> [[String]] {
  CSVReader.records(String(decoding: body, as: UTF8.self))
}

func postJSON(_ server: MockServer, _ path: String, _ json: String) throws -> RawResponse {
  let client = try RawClient(port: server.port)
  client.send(
    "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      + "Content-Length: \(json.utf8.count)\r\n\r\n\(json)")
  return try client.readResponse()
}

/// Process-wide descriptor and thread counts (Linux).
func processCounts() -> (fds: Int, threads: Int)? {
  let manager = FileManager.default
  guard let fds = try? manager.contentsOfDirectory(atPath: "/proc/self/fd"),
    let tasks = try? manager.contentsOfDirectory(atPath: "/proc/self/task")
  else { return nil }
  return (fds.count, tasks.count)
}

/// Every open descriptor of the process as `number -> target` (Linux), to name the descriptor
/// a leak check found.
func descriptorListing() -> [String] {
  let manager = FileManager.default
  let numbers = (try? manager.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
  return numbers.map { number in
    let target = try? manager.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(number)")
    return "\(number) -> \(target ?? "?")"
  }
}

/// `URLSession.data(from:)` needs macOS 12; the package supports 10.15.
func download(_ session: URLSession, _ url: URL) async throws -> (Data, URLResponse) {
  try await withCheckedThrowingContinuation { continuation in
    session.dataTask(with: url) { data, response, error in
      if let data, let response {
        continuation.resume(returning: (data, response))
      } else {
        continuation.resume(throwing: error ?? URLError(.unknown))
      }
    }.resume()
  }
}
