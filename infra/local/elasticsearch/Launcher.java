package gm.local.elasticsearch;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.lucene.analysis.en.PorterStemFilter;
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.regex.Regex;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.index.analysis.PreConfiguredTokenFilter;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.PluginsLoader;

/**
 * Starts one embedded Elasticsearch node for the local test engines (design §11), from the
 * server and transport-netty4 jars of Maven Central. infra/local/elasticsearch.sh lays out
 * path.home the way a distribution does (lib/ on the module path, modules/<name>/ with a
 * plugin-descriptor.properties each), compiles this file and passes every setting as
 * `key=value` arguments, so the script stays the one place where ports and paths are chosen.
 *
 * What the distribution's bootstrap does and this launcher deliberately skips:
 * - the server CLI and its stdin protocol: settings come from the arguments instead;
 * - entitlements: they need the entitlement agent, which is not published on Central. The
 *   node binds 127.0.0.1 only and runs our own tests, so the sandbox buys nothing here;
 * - native access (zstd, vector, system-call filter and mlockall libraries ship only in a
 *   distribution's lib/platform): the node logs "Unable to load native provider" once and
 *   runs on its pure-Java fallbacks.
 * Bootstrap checks stay as Node applies them (skipped for single-node on loopback).
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            // Exit instead of lingering with a half-started node: elasticsearch.sh sees the
            // process gone and prints the log at once rather than waiting out its timeout.
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("expected key=value, got: " + arg);
            builder.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Settings settings = builder.build();

        // Logging first: Elasticsearch's own logger facade has no provider until log4j is
        // configured, and even reading settings logs. Console only; elasticsearch.sh redirects
        // stdout to the log file, so no log4j2.properties has to be shipped.
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(Node.NODE_NAME_SETTING.get(settings));
        LogConfigurator.configureWithoutConfig(settings);

        Path configDir = Path.of(Environment.PATH_HOME_SETTING.get(settings), "config");
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Map.of(), configDir, () -> "gm-local");

        // false: a stateful (not serverless) node; each module's `deployment.target` says
        // which kinds of node load it.
        PluginsLoader plugins = PluginsLoader.createPluginsLoader(
            PluginsLoader.loadModulesBundles(environment.modulesDir(), false), Set.of(), Map.of());
        Node node = new Node(environment, plugins);

        // Node threads are daemons: the main thread holds the JVM up until SIGTERM, and the
        // hook closes the node so shards are flushed and the data directory stays reusable.
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "gm-local-es-shutdown"));
        node.start();
        stopped.await();
    }

    /**
     * The parts of the search index's content analyzer that live in Elasticsearch's
     * analysis-common module, which is not published on Maven Central: the `pattern` tokenizer
     * and the `asciifolding` and `porter_stem` filters. Registered under the upstream names,
     * with the upstream parameters and the same Lucene classes, so the index settings the
     * adapter sends work unchanged on a full distribution. elasticsearch.sh moves this class
     * into its own plugin jar (modules/gm-analysis): its plugin class loader must not also
     * find it on the launcher's class path.
     */
    public static final class GmAnalysisPlugin extends Plugin implements AnalysisPlugin {
        public GmAnalysisPlugin() {}

        @Override
        public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
            // Upstream defaults: split on \W+ (group -1 = the pattern separates tokens).
            return Map.of("pattern", (indexSettings, environment, name, settings) -> {
                var pattern = Regex.compile(settings.get("pattern", "\\W+"), settings.get("flags"));
                int group = settings.getAsInt("group", -1);
                return TokenizerFactory.newFactory(name, () -> new PatternTokenizer(pattern, group));
            });
        }

        @Override
        public List<PreConfiguredTokenFilter> getPreConfiguredTokenFilters() {
            return List.of(
                // true: also applies to normalizers / multi-term queries, as upstream declares it.
                PreConfiguredTokenFilter.singleton("asciifolding", true, ASCIIFoldingFilter::new),
                PreConfiguredTokenFilter.singleton("porter_stem", false, PorterStemFilter::new));
        }
    }
}
