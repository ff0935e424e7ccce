// PropertiesOracle loads each file named on the command line with
// java.util.Properties.load(Reader) (UTF-8) and prints one line per file:
// the file name, a space, then the properties as a JSON object sorted by
// key, with every char outside printable ASCII as a backslash-u escape; or
// "ERROR" if load threw. TestReadPropertiesMatchesJava compares
// ReadProperties with it. Run as a single-file program: java PropertiesOracle.java FILE...
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

public class PropertiesOracle {
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        for (String f : args) {
            Properties p = new Properties();
            try (Reader r = Files.newBufferedReader(Paths.get(f), StandardCharsets.UTF_8)) {
                p.load(r);
            } catch (IllegalArgumentException e) {
                System.out.println(f + " ERROR");
                continue;
            }
            TreeMap<String, String> m = new TreeMap<>();
            for (String k : p.stringPropertyNames()) {
                m.put(k, p.getProperty(k));
            }
            StringBuilder b = new StringBuilder(f).append(" {");
            boolean first = true;
            for (Map.Entry<String, String> e : m.entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append(quote(e.getKey())).append(':').append(quote(e.getValue()));
            }
            System.out.println(b.append('}'));
        }
    }
}
