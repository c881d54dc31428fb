import CepisSupport
import Foundation

/// One request received by a ``MockServer``.
public struct MockRequestRecord: Sendable, Hashable, Codable {
  /// The method, e.g. `GET`.
  public var method: String
  /// The path as received (percent-encoding kept), without the query.
  public var path: String
  /// The query string (after `?`), or `nil`.
  public var query: String?
  /// The header fields, names lowercased.
  public var headers: [String: String]
  /// When the request was parsed.
  public var arrival: Date
  /// The route, or `nil` for control and unknown paths.
  public var route: MockRoute?
  /// Whether the client closed the connection before the response was completely written
  /// (during a ``MockFault/delayHeaders(_:)`` wait, a dribble or an endless body): the
  /// request was cancelled. A connection closed after the whole response went out is not
  /// counted.
  public var clientClosed: Bool

  /// Creates a record.
  public init(
    method: String, path: String, query: String?, headers: [String: String], arrival: Date,
    route: MockRoute?, clientClosed: Bool = false
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headers = headers
    self.arrival = arrival
    self.route = route
    self.clientClosed = clientClosed
  }

  private enum CodingKeys: String, CodingKey {
    case method, path, query, headers, arrival, route, clientClosed
  }

  /// Decodes a record; a missing `clientClosed` (a log written before it existed) is `false`.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    method = try container.decode(String.self, forKey: .method)
    path = try container.decode(String.self, forKey: .path)
    query = try container.decodeIfPresent(String.self, forKey: .query)
    headers = try container.decode([String: String].self, forKey: .headers)
    arrival = try container.decode(Date.self, forKey: .arrival)
    route = try container.decodeIfPresent(MockRoute.self, forKey: .route)
    clientClosed = try container.decodeIfPresent(Bool.self, forKey: .clientClosed) ?? false
  }

  /// The decoded query items (a repeated name keeps its last value).
  public var queryItems: [String: String] { queryDictionary(query) }
}
