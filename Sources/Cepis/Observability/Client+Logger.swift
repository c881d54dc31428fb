#if Observability
  import CepisHTTP
  import Foundation
  import Logging

  extension Client {
    /// Who listens to a client made without a logger, in a build with the `Observability`
    /// trait: the metrics and tracing systems the program bootstrapped (nothing is recorded
    /// when it bootstrapped none), and the task-local logger a caller sets with `withLogger`.
    package static var defaultObserver: (any ClientEventObserver)? {
      ObservabilityObserver(logger: nil)
    }

    /// Creates a client that logs to `logger` (`Observability` trait).
    ///
    /// Every other parameter is as in
    /// ``init(baseURL:timeout:maxAttempts:backoffBase:backoffMax:totalTimeout:userAgent:transport:retryBudget:fallbacks:hedgeAfter:cache:rateLimit:)``.
    /// Cepis logs at `trace` (each attempt's start) and `debug` (everything else) only, with
    /// fixed messages and the values in metadata, every line of one call carrying its
    /// `request_id`. A logger the calling task sets with swift-log's `withLogger` is used
    /// instead where present. Metrics and spans go to the bootstrapped `MetricsSystem` and
    /// `InstrumentationSystem` whatever the logger; see <doc:ObserveCepisInProduction>.
    ///
    /// ```swift
    /// var logger = Logger(label: "checkout.cepis")
    /// logger.logLevel = .debug
    /// let client = Client(fallbacks: [.viaCEP()], logger: logger)
    /// ```
    public init(
      baseURL: URL = Client.defaultBaseURL,
      timeout: TimeInterval = 10,
      maxAttempts: Int = 3,
      backoffBase: TimeInterval = 0.5,
      backoffMax: TimeInterval = 8,
      totalTimeout: TimeInterval? = nil,
      userAgent: String? = nil,
      transport: Transport = .default,
      retryBudget: RetryBudget? = .standard,
      fallbacks: [Fallback] = [],
      hedgeAfter: TimeInterval? = nil,
      cache: AddressCache? = nil,
      rateLimit: RateLimit? = nil,
      logger: Logger
    ) {
      self.init(
        baseURL: baseURL, timeout: timeout, maxAttempts: maxAttempts, backoffBase: backoffBase,
        backoffMax: backoffMax, totalTimeout: totalTimeout, userAgent: userAgent,
        transport: transport, retryBudget: retryBudget, fallbacks: fallbacks,
        hedgeAfter: hedgeAfter, cache: cache, rateLimit: rateLimit, environment: .live,
        observer: ObservabilityObserver(logger: logger))
    }
  }
#endif
