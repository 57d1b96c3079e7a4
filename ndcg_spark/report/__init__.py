"""The run's report: data collected from the tables (Spark), HTML and SVG rendering (pure), text summaries."""
