{
  "targets": [
    {
      "target_name": "http_front",
      "sources": ["src/http_front.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
