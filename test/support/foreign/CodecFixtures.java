// Compresses stdin as the Java Kafka producer compresses a record batch's records
// (kafka-clients' Compression, magic v2), once per codec; prints
// {"gzip": base64, "snappy": base64, "lz4": base64, "zstd": base64}.
// Run by make_codec_fixtures.py: java -cp "<kafka>/lib/*" CodecFixtures.java < plaintext
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.Base64;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.internals.ByteBufferOutputStream;

public class CodecFixtures {
    public static void main(String[] args) throws Exception {
        byte[] input = System.in.readAllBytes();
        Compression[] codecs = {Compression.gzip().build(), Compression.snappy().build(), Compression.lz4().build(), Compression.zstd().build()};
        String[] names = {"gzip", "snappy", "lz4", "zstd"};
        StringBuilder json = new StringBuilder("{");
        for (int i = 0; i < codecs.length; i++) {
            ByteBufferOutputStream buffer = new ByteBufferOutputStream(1024);
            try (OutputStream out = codecs[i].wrapForOutput(buffer, RecordBatch.MAGIC_VALUE_V2)) {
                out.write(input);
            }
            ByteBuffer bytes = buffer.buffer();
            bytes.flip();
            byte[] copy = new byte[bytes.remaining()];
            bytes.get(copy);
            json.append(i == 0 ? "" : ",").append('"').append(names[i]).append("\":\"").append(Base64.getEncoder().encodeToString(copy)).append('"');
        }
        System.out.println(json.append('}'));
    }
}
