// executeBatch of a prepared one-row INSERT, as Spark's JDBC writer does it.
// java -cp postgresql.jar BatchInsert.java URL TABLE ROWS BATCH AUTOCOMMIT [BAD_ROW BAD_KIND]
//   row i inserts (i % 100, i, i / 4.0); BAD_ROW (0-based) gets an out-of-range int
//   (BAD_KIND "range") or a NULL in the first column (BAD_KIND "null").
// Prints "batch <i> ok <sum of update counts>" per batch, or "batch <i> error <SQLSTATE> <message>".
import java.sql.*;

public class BatchInsert {
    public static void main(String[] a) throws Exception {
        String url = a[0], table = a[1];
        int rows = Integer.parseInt(a[2]), batch = Integer.parseInt(a[3]);
        boolean autocommit = Boolean.parseBoolean(a[4]);
        int bad = a.length > 5 ? Integer.parseInt(a[5]) : -1;
        String badKind = a.length > 6 ? a[6] : "range";
        try (Connection c = DriverManager.getConnection(url, "postgres", "")) {
            c.setAutoCommit(autocommit);
            PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (g, v, f) VALUES (?, ?, ?)");
            int b = 0;
            for (int start = 0; start < rows; start += batch, b++) {
                for (int i = start; i < Math.min(rows, start + batch); i++) {
                    if (i == bad && badKind.equals("null")) ps.setNull(1, Types.INTEGER);
                    else ps.setInt(1, i % 100);
                    if (i == bad && badKind.equals("range")) ps.setLong(2, 1L << 40);
                    else ps.setInt(2, i);
                    ps.setDouble(3, i / 4.0);
                    ps.addBatch();
                }
                try {
                    int[] counts = ps.executeBatch();
                    if (!autocommit) c.commit();
                    long sum = 0;
                    for (int n : counts) sum += n == Statement.SUCCESS_NO_INFO ? 1 : n;  // rewritten batches
                    System.out.println("batch " + b + " ok " + sum);
                } catch (SQLException e) {
                    SQLException cause = e.getNextException() != null ? e.getNextException() : e;
                    System.out.println("batch " + b + " error " + cause.getSQLState() + " "
                                       + cause.getMessage().replace('\n', ' '));
                    ps.clearBatch();
                    if (!autocommit) c.rollback();
                }
            }
        }
        System.out.println("DONE");
    }
}
