/* Shared by app.c (the buggy application) and fault_demo.c (start-up, UART, and the fault reports). */
#ifndef DEMO_H
#define DEMO_H
#include <stdint.h>

void app_task(void);    /* -> sensor_store(NULL, ...): MemManage fault */
void radio_task(void);  /* -> parse_frame(): undefined instruction */
void logger_task(void); /* -> queue_send(NULL): configASSERT fails */

/* FreeRTOS's FreeRTOSConfig.h of its demos: configASSERT calls the application's vAssertCalled. */
void vAssertCalled(unsigned long ulLine, const char *const pcFileName);
#define configASSERT(x)                            \
    if ((x) == 0) {                                \
        vAssertCalled(__LINE__, __FILE__);         \
    }
#endif
